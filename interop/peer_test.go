package interop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/http3"
)

// peerTestTimeout bounds each interop test from start to end.
const peerTestTimeout = 30 * time.Second

// logWaitTimeout bounds the wait for an access-log line once the client
// has its response: the handler logs right after writing it.
const logWaitTimeout = 5 * time.Second

// waitRequest is srv.WaitRequest bounded by logWaitTimeout.
func waitRequest(ctx context.Context, srv *Server, path string) (AccessRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, logWaitTimeout)
	defer cancel()
	return srv.WaitRequest(ctx, path)
}

// peerPackages names the Debian package of each peer, for skip messages.
var peerPackages = map[string]string{
	"gtlsclient": "ngtcp2-client",
	"gtlsserver": "ngtcp2-server",
	"chromium":   "chromium",
}

// findPeer returns the path of a peer program or skips the test. It also
// looks in /usr/sbin, where Debian puts gtlsserver, since a non-root PATH
// often lacks it.
func findPeer(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Skipf("interop peer %s is not installed (apt-get install %s; CI installs it)", name, peerPackages[name])
	return ""
}

// peer is a peer program started by startPeer, its output (stdout and
// stderr together) going to a file.
type peer struct {
	name    string
	cmd     *exec.Cmd
	outFile string
	exited  chan struct{} // closed when the process has been waited for
	err     error         // Wait's result, valid after exited
}

// startPeer starts bin with args; it is killed, with its children, when
// ctx ends or the test ends. The output goes to a file rather than a pipe
// so that a child holding it open cannot keep Wait from returning.
func startPeer(ctx context.Context, t *testing.T, bin string, args ...string) *peer {
	t.Helper()
	name := filepath.Base(bin)
	out, err := os.CreateTemp(t.TempDir(), name+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() // the child has its own descriptor
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// A home of its own: Chromium writes crash reports and caches under
	// $HOME and the XDG directories, which must not outlive the test.
	home := t.TempDir()
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
	cmd.WaitDelay = 5 * time.Second
	ownProcessGroup(cmd)
	t.Logf("running %s", strings.Join(cmd.Args, " "))
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &peer{name: name, cmd: cmd, outFile: out.Name(), exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		killPeerGroup(cmd) // children it left behind
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// stop kills the peer and its children and waits for it.
func (p *peer) stop() {
	killPeerGroup(p.cmd)
	<-p.exited
}

// wait waits until the peer exits or ctx ends (then it is killed) and
// returns its exit error.
func (p *peer) wait(ctx context.Context) error {
	select {
	case <-p.exited:
		return p.err
	case <-ctx.Done():
		p.stop()
		return errors.Join(ctx.Err(), p.err)
	}
}

// output returns what the peer has written so far.
func (p *peer) output(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(p.outFile)
	if err != nil {
		t.Fatalf("reading %s output: %v", p.name, err)
	}
	return string(b)
}

// logTail logs the last lines of the peer's output, for failures.
func (p *peer) logTail(t *testing.T, lines int) {
	t.Helper()
	all := strings.Split(strings.TrimRight(p.output(t), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	t.Logf("last %d lines of %s output:\n%s", len(all), p.name, strings.Join(all, "\n"))
}

// outputPollInterval is how often waitOutput rereads the output file.
const outputPollInterval = 20 * time.Millisecond

// waitOutput waits until the peer's output contains s, the peer exits, or
// ctx ends.
func (p *peer) waitOutput(ctx context.Context, s string) error {
	tick := time.NewTicker(outputPollInterval)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(p.outFile)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), s) {
			return nil
		}
		select {
		case <-tick.C:
		case <-p.exited:
			return fmt.Errorf("%s exited without printing %q", p.name, s)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to print %q: %w", p.name, s, ctx.Err())
		}
	}
}

// fetchHTTP3 GETs url with tr and returns the status, the protocol and the
// body; a failed request or body read fails the test at once.
func fetchHTTP3(ctx context.Context, t *testing.T, tr *http3.Transport, url string) (status int, proto string, body []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, resp.Proto, body
}

func TestFindPeerSkipsWhenMissing(t *testing.T) {
	reached := false
	t.Run("missing", func(t *testing.T) {
		findPeer(t, "turboretry-no-such-peer")
		reached = true
	})
	if reached {
		t.Error("findPeer did not skip for a missing program")
	}
}
