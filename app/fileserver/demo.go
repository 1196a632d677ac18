package fileserver

import (
	"embed"
	"io/fs"
)

//go:embed demo
var demoFiles embed.FS

// DemoFS returns the embedded demo site served when no root is given.
func DemoFS() fs.FS {
	sub, err := fs.Sub(demoFiles, "demo")
	if err != nil {
		// "demo" is a valid path by construction; fs.Sub cannot fail.
		return demoFiles
	}
	return sub
}
