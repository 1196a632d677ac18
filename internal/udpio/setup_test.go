package udpio

import (
	"net"
	"testing"
)

// setupConn runs Setup and fails the test on error.
func setupConn(t testing.TB, c *net.UDPConn, cfg Config) Capabilities {
	t.Helper()
	caps, err := Setup(c, cfg)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	return caps
}
