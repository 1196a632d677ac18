//go:build !unix

package fileserver

import "errors"

// dupFD fails: restarts need a Unix system.
func dupFD(uintptr) (int, error) { return 0, errors.New("restart needs a Unix system") }
