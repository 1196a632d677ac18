package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRestartKeepsConnectionsXDP: restart with the integrated XDP offload
// (--offload xdp on the server's veth end). The old process releases the
// program and its AF_XDP sockets before it starts the successor, which
// attaches its own; a successor that fails gives them back. Throughout, a
// stream of new connections (ours and quic-go's) and slow downloads run,
// during the second restart a flood of Initials too, and nothing may fail: the old process's packets pass the kernel stack
// with or without a program (its IDs verify on their MAC), Initials in the
// gap meet the host's own address validation, and after the successor's
// "ready" its agent answers every new connection with a Retry.
func TestRestartKeepsConnectionsXDP(t *testing.T) {
	e := newRestartEnv(t, "--offload", "xdp", "--iface", "s0")
	attached := func() int { return strings.Count(e.firstOut.String(), "datapath: started") }
	// The log comes through a pipe copied on another goroutine.
	e.waitFor(func() bool { return attached() >= 1 })
	if attached() != 1 {
		t.Fatalf("the first server did not start its XDP datapath:\n%s", e.firstOut.String())
	}
	// Deferred: what failed before a Fatal is the interesting part.
	defer e.streamNewConnections()()

	// A bad binary: the server had released the interface, and takes it
	// back once the child is reaped.
	pid0, _ := readPIDFile(e.pidFile)
	started, done := e.slowDownloads("bad binary")
	started()
	if out, code := e.restart("--binary", "/bin/false"); code != 1 || !strings.Contains(out, "exited before it was ready") {
		t.Errorf("restart with /bin/false: exit %d: %s", code, out)
	}
	done()
	if pid, _ := readPIDFile(e.pidFile); pid != pid0 || !running(pid0) {
		t.Fatalf("after the failed restart the pid file names %d, want %d still running", pid, pid0)
	}
	e.waitFor(func() bool { return attached() >= 2 })
	if n := attached(); n != 2 {
		t.Fatalf("after the failed restart the datapath started %d times, want 2 (taken back)", n)
	}

	for round := range 2 {
		name := fmt.Sprintf("xdp restart %d", round+1)
		old, _ := readPIDFile(e.pidFile)
		started, done := e.slowDownloads(name)
		started()
		migrate, migrated := e.migratingDownload(name)
		var flood *exec.Cmd
		var floodOut serveBuffer
		if round == 1 {
			// A flood of Initials across the handover: the old agent
			// answers it, then the host stacks in the gap without a
			// program (--retry auto), then the new agent.
			flood = exec.Command("ip", "netns", "exec", e.nsC, e.bin, "flood", "--target", rsAddr,
				"--count", "12000", "--duration", "4s", "--rate", "3000")
			flood.Stdout, flood.Stderr = &floodOut, &floodOut
			if err := flood.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond) // under way when the restart comes
		}
		out, code := e.restart()
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, out)
		}
		e.waitFor(func() bool { return attached() >= 3+round })
		if n := attached(); n != 3+round {
			t.Errorf("%s: the datapath started %d times, want %d (the successor's)", name, n, 3+round)
		}
		successor, _ := readPIDFile(e.pidFile)
		if successor == old || !running(successor) {
			t.Fatalf("%s: the pid file names %d (old %d)", name, successor, old)
		}
		retriedBefore := retried(e.firstOut.String())
		if e.slowLeft.Load() > 0 {
			migrate()
		}
		done()
		migrated()
		if flood != nil {
			if err := flood.Wait(); err != nil {
				t.Errorf("%s: flood: %v: %s", name, err, floodOut.String())
			}
			t.Logf("%s: flood: %s", name, strings.TrimSpace(floodOut.String()))
		}
		// New connections went on every 50 ms while the downloads
		// finished: the successor's agent sent them Retries (the host,
		// unflooded, would not).
		e.wait(name+": Retries from the successor's agent", func() bool {
			return retried(e.firstOut.String()) > retriedBefore+3
		})
		if !e.waitFor(func() bool { return !running(old) }) {
			t.Fatalf("%s: the old process %d did not exit after its last connection", name, old)
		}
		t.Logf("%s: %s", name, strings.TrimSpace(out))
	}
	time.Sleep(200 * time.Millisecond) // a few more new connections on the last successor
	t.Logf("without a fast path (released to started, the failed restart first): %v", xdpGaps(e.firstOut.String()))
}

// xdpGaps returns, from the servers' merged log, how long each time the
// interface had no XDP program: from a datapath's "closed" to the next
// "started" (the successor's, or the old process's own after a failed
// restart).
func xdpGaps(log string) []time.Duration {
	var gaps []time.Duration
	var closed time.Time
	for _, line := range strings.Split(log, "\n") {
		ts, ok := logTime(line)
		switch {
		case !ok:
		case strings.Contains(line, `msg="datapath: closed"`):
			closed = ts
		case strings.Contains(line, `msg="datapath: started"`) && !closed.IsZero():
			gaps = append(gaps, ts.Sub(closed))
			closed = time.Time{}
		}
	}
	return gaps
}

// logTime reads a log line's time= field.
func logTime(line string) (time.Time, bool) {
	_, rest, ok := strings.Cut(line, "time=")
	if !ok {
		return time.Time{}, false
	}
	field, _, _ := strings.Cut(rest, " ")
	ts, err := time.Parse(time.RFC3339Nano, field)
	return ts, err == nil
}
