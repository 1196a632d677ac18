//go:build linux

package handover

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// start runs a shell script as the successor: fd 3 is its end of the pair,
// the header waits there unread.
func start(t *testing.T, script string, timeout time.Duration) (*Child, error) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	f, err := os.CreateTemp(t.TempDir(), "inherited")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := Start(context.Background(), Spec{Binary: "/bin/sh", Args: []string{"-c", script}, Files: []*os.File{f}, Names: []string{"file"}, Timeout: timeout})
	if c != nil {
		t.Cleanup(func() {
			_ = c.Release()
			<-c.Exited
		})
	}
	return c, err
}

func TestStartReady(t *testing.T) {
	// The child sees its pair at 3 and the file at 4, and EnvVar.
	c, err := start(t, `test "$`+EnvVar+`" = 3 && test -e /proc/self/fd/4 && echo ready >&3 && read header <&3 && read eof <&3; exit 0`, 10*time.Second)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if c.PID <= 0 {
		t.Fatalf("pid %d", c.PID)
	}
	// Release closes the pair: the child's read ends, it exits.
	_ = c.Release()
	select {
	case <-c.Exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the child did not see the pair close")
	}
}

func TestStartFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		script  string
		timeout time.Duration
		want    string
	}{
		"says why":   {`echo "fail the address is in use" >&3; sleep 5`, 10 * time.Second, "the address is in use"},
		"exits":      {`exit 3`, 10 * time.Second, "exited before it was ready (exit status 3"},
		"never":      {`exec sleep 30`, 300 * time.Millisecond, "not ready within 300ms"},
		"closes fd3": {`read line <&3; exec 3>&-; exec sleep 30`, 10 * time.Second, "closed the handover socket without saying ready"},
	} {
		t.Run(name, func(t *testing.T) {
			began := time.Now()
			c, err := start(t, tc.script, tc.timeout)
			if c != nil || !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, %v; want ErrNotReady with %q", c, err, tc.want)
			}
			// Killed and reaped, not left behind: well before the
			// script's own sleep ends.
			if time.Since(began) > 4*time.Second {
				t.Fatalf("Start took %v", time.Since(began))
			}
		})
	}
	if _, err := Start(context.Background(), Spec{Binary: "/nonexistent/turboretry", Timeout: time.Second}); !errors.Is(err, ErrNotReady) {
		t.Fatalf("a missing binary: %v", err)
	}
}

func TestWithoutHandover(t *testing.T) {
	got := withoutHandover([]string{"A=1", EnvVar + "=3", "B=2"})
	if strings.Join(got, " ") != "A=1 B=2" {
		t.Fatalf("%v", got)
	}
}
