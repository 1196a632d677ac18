package fileserver

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"syscall"
)

// wellKnown is the one dot-directory served without --dotfiles: RFC 8615
// puts ACME challenges, security.txt and the like there.
const wellKnown = ".well-known"

// siteFS is the view of the served tree that the file handler reads: names
// with a hidden element (a dotfile, unless dotfiles is set) do not exist,
// directories list no hidden entries, and an open that fails because of
// the name (a symbolic link out of the root, a loop, a name too long, a
// file used as a directory) fails as not found, so the client gets a 404
// rather than a 500.
type siteFS struct {
	fsys     fs.FS
	dotfiles bool
}

// hidden reports whether the fs path name (no leading slash, "." for the
// root) has an element starting with a dot, other than a top-level
// .well-known.
func hidden(name string) bool {
	if name == "." {
		return false
	}
	first := true // SplitSeq, not Split: no slice per lookup
	for elem := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(elem, ".") && (!first || elem != wellKnown) {
			return true
		}
		first = false
	}
	return false
}

func (s siteFS) Open(name string) (fs.File, error) {
	if !s.dotfiles && hidden(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f, err := s.fsys.Open(name)
	if err != nil {
		return nil, notFoundIfName(err)
	}
	if s.dotfiles {
		return f, nil
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return hidingDir{f}, nil
	}
	return f, nil
}

func (s siteFS) Stat(name string) (fs.FileInfo, error) {
	if !s.dotfiles && hidden(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	fi, err := fs.Stat(s.fsys, name)
	if err != nil {
		return nil, notFoundIfName(err)
	}
	return fi, nil
}

// notFoundIfName turns an error caused by the name itself into
// fs.ErrNotExist. Permission errors stay (403), and so do errors of the
// system (too many open files, I/O errors), which are the server's fault
// and rightly a 500.
func notFoundIfName(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOTDIR, syscall.ENAMETOOLONG, syscall.ELOOP, syscall.EINVAL:
		default:
			return err
		}
	}
	// What is left is the name's fault: os.Root's "path escapes from
	// parent" (a symbolic link out of the root) or fs.ErrInvalid.
	return &fs.PathError{Op: "open", Path: pathOf(err), Err: fs.ErrNotExist}
}

func pathOf(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path
	}
	return ""
}

// hidingDir is a directory whose listing leaves out hidden entries.
type hidingDir struct{ fs.File }

// ReadDir follows fs.ReadDirFile: with n > 0 it returns at least one entry
// or an error, so it reads on while whole batches are hidden.
func (d hidingDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rd, ok := d.File.(fs.ReadDirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Err: errors.New("not implemented")}
	}
	for {
		entries, err := rd.ReadDir(n)
		kept := entries[:0]
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") {
				kept = append(kept, e)
			}
		}
		if len(kept) > 0 || err != nil || n <= 0 {
			if n <= 0 && err == io.EOF {
				err = nil
			}
			return kept, err
		}
	}
}
