package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRestartRefusedWithoutBPF: serve --pid-file without the privilege to
// load the steering program (as root, its capabilities dropped with
// setpriv) says at start that restart will be refused, and `turboretry
// restart` is refused with the reason and the fix while the server keeps
// serving: the honest fallback, since a successor's sockets would receive
// this process's QUIC packets.
func TestRestartRefusedWithoutBPF(t *testing.T) {
	bin := buildTurboretry(t)
	dir := t.TempDir()
	state, pidFile := filepath.Join(dir, "state"), filepath.Join(dir, "serve.pid")
	args := []string{bin, "serve", "--addr", "127.0.0.1:0", "--state-dir", state, "--pid-file", pidFile, "--workers", "2"}
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Skip("skipping: as root this test drops capabilities with setpriv, which is not installed")
		}
		args = append([]string{"setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"}, args...)
	}
	var out serveBuffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("server log:\n%s", out.String())
		}
	}()
	for start := time.Now(); !strings.Contains(out.String(), "restart will be refused"); time.Sleep(10 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("serve exited")
		default:
		}
		if time.Since(start) > 20*time.Second {
			t.Fatal("serve never said that restart will be refused")
		}
	}
	if strings.Contains(out.String(), "steering=steered") {
		t.Skip("skipping: the steering program loaded without capabilities here")
	}
	pid, err := readPIDFile(pidFile)
	if err != nil || pid != cmd.Process.Pid {
		t.Fatalf("pid file: %d, %v; want %d", pid, err, cmd.Process.Pid)
	}
	res, err := exec.Command(bin, "restart", "--pid-file", pidFile, "--state-dir", state).CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(res), "steering program is not loaded") || !strings.Contains(string(res), "CAP_BPF") {
		t.Fatalf("restart without the steering program: %v: %s", err, res)
	}
	t.Logf("%s", strings.TrimSpace(string(res)))
	select {
	case <-exited:
		t.Fatal("serve exited after the refused restart")
	default:
	}
	if pid, _ := readPIDFile(pidFile); pid != cmd.Process.Pid {
		t.Fatalf("the pid file names %d after the refused restart", pid)
	}
}
