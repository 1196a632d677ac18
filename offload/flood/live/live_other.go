//go:build !linux

package live

import (
	"context"
	"errors"
	"io"
	"net/netip"

	"github.com/turboretry/turboretry/offload/flood"
)

var errLinux = errors.New("live: BPF_PROG_RUN live frames need Linux 5.18 or later")

// Generator needs Linux.
type Generator struct{}

// New fails outside Linux.
func New(Config) (*Generator, error) { return nil, errLinux }

// Run fails.
func (*Generator) Run(context.Context, flood.RunConfig) (Stats, error) { return Stats{}, errLinux }

// Close does nothing.
func (*Generator) Close() error { return nil }

// ReadXmitStats fails outside Linux.
func ReadXmitStats(string) (XmitStats, bool, error) { return XmitStats{}, false, errLinux }

// AttachDropSink fails outside Linux.
func AttachDropSink(string) (io.Closer, error) { return nil, errLinux }

// ReplySink needs Linux.
type ReplySink struct{}

// AttachReplySink fails outside Linux.
func AttachReplySink(string, netip.Prefix, uint16) (*ReplySink, error) { return nil, errLinux }

// Counts fails.
func (*ReplySink) Counts() (retries, other uint64, err error) { return 0, 0, errLinux }

// Close does nothing.
func (*ReplySink) Close() error { return nil }
