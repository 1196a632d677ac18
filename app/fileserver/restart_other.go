//go:build !linux

package fileserver

import "errors"

// dupFD fails: restarts need Linux.
func dupFD(uintptr) (int, error) { return 0, errors.New("restart needs a Unix system") }
