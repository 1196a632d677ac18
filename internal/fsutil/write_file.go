// Package fsutil writes the files TurboRetry keeps on disk (root secrets,
// keys, certificates) so that a crash never leaves a truncated file and a
// private file is never readable by others, not even briefly.
package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists is returned (wrapped, with the path) by WriteFileAtomic when
// overwrite is false and the file already exists.
var ErrExists = errors.New("file already exists")

// WriteFileAtomic writes data to path with mode perm. The data goes to a
// temporary file in the same directory first, created with perm, synced,
// then put in place: renamed over path when overwrite is true, else
// hard-linked, which fails if path exists. Where the file system has no
// hard links, it falls back to an exclusive create.
func WriteFileAtomic(path string, data []byte, perm os.FileMode, overwrite bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".turboretry-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // harmless after a rename; needed after a link
	if err := writeAndClose(tmp, data, perm); err != nil {
		return err
	}
	if overwrite {
		return os.Rename(tmp.Name(), path)
	}
	err = os.Link(tmp.Name(), path)
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", path, ErrExists)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", path, ErrExists)
		}
		return err
	}
	if err := writeAndClose(f, data, perm); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

func writeAndClose(f *os.File, data []byte, perm os.FileMode) error {
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
