//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestServeOffloadSignals: SIGUSR1 and SIGUSR2 reach serve's offload
// hooks instead of killing the process; without an offload they say that
// none runs.
func TestServeOffloadSignals(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut serveBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--state-dir", filepath.Join(t.TempDir(), "state")}, &out, &errOut)
	}()
	serveWait(t, "the SPKI line", func() bool { return strings.Contains(out.String(), "SPKI sha256 (base64): ") })
	for _, s := range []struct {
		sig  syscall.Signal
		want string
	}{
		{syscall.SIGUSR1, "SIGUSR1: pausing the offload agent"},
		{syscall.SIGUSR2, "SIGUSR2: resuming the offload agent"},
	} {
		if err := syscall.Kill(os.Getpid(), s.sig); err != nil {
			t.Fatal(err)
		}
		serveWait(t, s.want, func() bool {
			for line := range strings.Lines(errOut.String()) {
				if strings.Contains(line, s.want) && strings.Contains(line, "running=false") {
					return true
				}
			}
			return false
		})
	}
	cancel()
	if code := <-exit; code != exitOK {
		t.Errorf("exit %d, stderr:\n%s", code, errOut.String())
	}
}
