package split

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/token"
)

// The SIGKILL test runs the agent as a process of its own: the test binary
// started again with childEnv set (TestMain then runs the agent instead of
// the tests) under "ip netns exec" in the dpu namespace.
const (
	childEnv       = "TURBORETRY_SPLIT_AGENT_SECRET" // hex root secret
	childReadyLine = "split agent ready"
)

func TestMain(m *testing.M) {
	if secret := os.Getenv(childEnv); secret != "" {
		if err := runChildAgent(secret); err != nil {
			fmt.Fprintln(os.Stderr, "split agent child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChildAgent runs the agent until stdin closes (the parent is done) or
// the process is killed.
func runChildAgent(secretHex string) error {
	root, err := hex.DecodeString(secretHex)
	if err != nil {
		return err
	}
	kr, err := token.NewKeyRing(root, 0)
	if err != nil {
		return err
	}
	a, err := Start(agentConfig(kr))
	if err != nil {
		return err
	}
	fmt.Println(childReadyLine)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return a.Close()
}

// startChildAgent starts the agent process in the dpu namespace and waits
// until it runs.
func startChildAgent(tb testing.TB, e *emulation, root []byte) *exec.Cmd {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", e.dpu, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+hex.EncodeToString(root))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == childReadyLine {
				ready <- true
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			_ = cmd.Wait()
			tb.Fatalf("the agent process ended before it was ready: %s", stderr.String())
		}
	case <-time.After(hangGuard):
		tb.Fatalf("the agent process never got ready: %s", stderr.String())
	}
	return cmd
}

// TestSplitAgentKilledFailsOpen: the agent runs as a separate process;
// a client connects through it (the agent's Retry, no host Retry). After
// SIGKILL the kernel has removed the XDP program from p0 (its link was not
// pinned), the open connection keeps working, and a new client connects
// through the host's own Retry (fail-open).
func TestSplitAgentKilledFailsOpen(t *testing.T) {
	e := newEmulation(t)
	kr, root := testKeyRing(t)
	h := startHost(t, e, root, kr)
	cmd := startChildAgent(t, e, root)
	if !e.xdpAttached(t) {
		t.Fatal("no XDP program on p0 while the agent process runs")
	}
	c := echo(t, e, "before the kill")
	av := h.tr.AddressValidationStats()
	if av.RetriesSent != 0 || av.TokensAccepted["agent/retry"] != 1 {
		t.Fatalf("host before the kill: %d Retries, tokens %v; want the agent's Retry only", av.RetriesSent, av.TokensAccepted)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("agent process: %v; want killed", err)
	}
	testutil.WaitFor(t, "the kernel to remove the XDP program from p0", func() bool { return !e.xdpAttached(t) })

	echoOn(t, c, "after the kill, same connection")
	echo(t, e, "after the kill, new connection")
	av = h.tr.AddressValidationStats()
	if av.RetriesSent < 1 || av.TokensAccepted["host/retry"] < 1 {
		t.Errorf("host after the kill: %d Retries, tokens %v; want the host's own Retry to take over", av.RetriesSent, av.TokensAccepted)
	}
}
