//go:build !linux

// Package handover starts a successor process for `turboretry restart`;
// on this platform there is none (see the Linux implementation: restarts
// need the sk_reuseport steering program).
package handover

import (
	"context"
	"errors"
	"io"
	"os"
	"time"
)

// EnvVar names the environment variable that tells a child it takes over.
const EnvVar = "TURBORETRY_HANDOVER_FD"

// Header describes what the child inherits.
type Header struct {
	Version   int
	ParentPID int
	Files     []string
	Values    map[string]string
}

// Spec is what Start needs.
type Spec struct {
	Binary         string
	Args           []string
	Files          []*os.File
	Names          []string
	Values         map[string]string
	Stdout, Stderr io.Writer
	Timeout        time.Duration
}

// Child is a successor that reported ready.
type Child struct {
	PID    int
	Exited chan struct{}
	Err    error
}

// ErrNotReady is wrapped by Start.
var ErrNotReady = errors.New("the new process did not take over")

// Start fails: restarts need Linux.
func Start(context.Context, Spec) (*Child, error) {
	return nil, errors.New("handover: restart needs Linux (the sk_reuseport steering program)")
}

// Release does nothing.
func (c *Child) Release() error { return nil }

// Inherited is what a successor received; never on this platform.
type Inherited struct{ Header Header }

// Inherit returns nil: nothing is inherited here.
func Inherit() (*Inherited, error) { return nil, nil }

// File returns nil.
func (in *Inherited) File(string) *os.File { return nil }

// Ready does nothing.
func (in *Inherited) Ready() error { return nil }

// Fail does nothing.
func (in *Inherited) Fail(error) {}

// PredecessorGone is closed: there is none.
func (in *Inherited) PredecessorGone() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Close does nothing.
func (in *Inherited) Close() error { return nil }
