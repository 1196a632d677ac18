//go:build linux

package xdp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/internal/testutil"
)

// attachChildEnv makes the test binary act as attachChild (see TestMain).
const attachChildEnv = "TR_XDP_ATTACH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(attachChildEnv) != "" {
		os.Exit(attachChild())
	}
	os.Exit(m.Run())
}

// attachChild runs inside a private network namespace: it attaches the
// program to lo, detaches and attaches again, printing a line after each
// step and waiting for a line on stdin before the next. The parent kills
// it with SIGKILL in the end.
func attachChild() int {
	fail := func(err error) int {
		fmt.Println("error:", err)
		return 1
	}
	p, err := Load(Config{Port: testPort, Key: testKey})
	if err != nil {
		return fail(err)
	}
	in := bufio.NewScanner(os.Stdin)
	step := func(msg string) {
		fmt.Println(msg)
		in.Scan()
	}
	if err := p.Attach("lo", ModeGeneric); err != nil {
		return fail(err)
	}
	if err := p.Attach("lo", ModeGeneric); !errors.Is(err, errAttached) {
		return fail(fmt.Errorf("second Attach: %v, want errAttached", err))
	}
	step("attached")
	if err := p.Detach(); err != nil {
		return fail(err)
	}
	step("detached")
	if err := p.Attach("lo", ModeAuto); err != nil {
		return fail(err)
	}
	step("attached")
	return fail(errors.New("not killed"))
}

// TestAttachDetachAndCrash checks Attach and Detach on lo in a network
// namespace of its own, and that the kernel removes the program when its
// process dies by SIGKILL (the link is not pinned).
func TestAttachDetachAndCrash(t *testing.T) {
	loadForTest(t, Config{Port: testPort}) // skips without BPF
	netnstest.RequireRoot(t, "a private network namespace")
	ns := netnstest.New(t, "trxdp-test")
	attached := func() bool {
		out, err := exec.Command("ip", "-n", ns, "link", "show", "lo").CombinedOutput()
		if err != nil {
			t.Fatalf("ip link show: %v: %s", err, out)
		}
		return strings.Contains(string(out), "xdp")
	}
	if attached() {
		t.Fatal("fresh namespace already has an XDP program on lo")
	}

	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), attachChildEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	lines := make(chan string)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	next := func(want string) {
		t.Helper()
		select {
		case got, ok := <-lines:
			if !ok || got != want {
				t.Fatalf("child said %q (open %v), want %q; stderr: %s", got, ok, want, stderr.String())
			}
		case <-time.After(time.Minute): // a guard against a hung child, not a speed check
			t.Fatalf("child silent, want %q", want)
		}
	}
	resume := func() {
		if _, err := io.WriteString(stdin, "\n"); err != nil {
			t.Fatal(err)
		}
	}

	next("attached")
	if !attached() {
		t.Fatal("no XDP program on lo after Attach")
	}
	resume()
	next("detached")
	if attached() {
		t.Fatal("XDP program still on lo after Detach")
	}
	resume()
	next("attached")
	if !attached() {
		t.Fatal("no XDP program on lo after the second Attach")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The link's last descriptor closes as the process exits; allow the
	// kernel a moment in case the release is deferred.
	testutil.WaitFor(t, "the XDP program to leave lo after its process was killed", func() bool { return !attached() })
}
