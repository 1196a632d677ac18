//go:build !linux

package split

import "github.com/turboretry/turboretry/token"

// Agent is the split-mode agent; it does not run on this platform.
type Agent struct{}

// Start checks cfg and fails with ErrUnsupported: the agent needs Linux
// with AF_XDP.
func Start(cfg Config) (*Agent, error) {
	if _, err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	return nil, ErrUnsupported
}

// Admit fails with ErrUnsupported.
func (a *Agent) Admit([]byte) error { return ErrUnsupported }

// SetKeyRing fails with ErrUnsupported.
func (a *Agent) SetKeyRing(*token.KeyRing) error { return ErrUnsupported }

// Pause does nothing.
func (a *Agent) Pause() {}

// Resume does nothing.
func (a *Agent) Resume() {}

// Stats fails with ErrUnsupported.
func (a *Agent) Stats() (Stats, error) { return Stats{}, ErrUnsupported }

// Close does nothing.
func (a *Agent) Close() error { return nil }

// Admitted reports false.
func (a *Agent) Admitted([]byte) bool { return false }
