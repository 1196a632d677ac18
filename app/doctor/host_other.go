//go:build !linux

package doctor

import (
	"errors"
	"os"
	"runtime"
)

// Host returns the System of this machine: outside Linux only the CPU
// count and files are real; the Linux checks report themselves
// unavailable.
func Host() System { return host{} }

type host struct{}

var errNotLinux = errors.New("only on Linux (little-endian)")

func (host) ReadFile(name string) ([]byte, error)        { return os.ReadFile(name) }
func (host) UDPOffload() (bool, bool, error)             { return false, false, errNotLinux }
func (host) Features(string) (map[string]Feature, error) { return nil, errNotLinux }
func (host) Channels(string) (Channels, error)           { return Channels{}, errNotLinux }
func (host) XDPFeatures(string) (XDP, error)             { return XDP{}, errNotLinux }
func (host) Driver(string) (string, error)               { return "", errNotLinux }
func (host) ReuseportBPF() error                         { return errNotLinux }
func (host) NumCPU() int                                 { return runtime.NumCPU() }
