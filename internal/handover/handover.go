//go:build linux

// Package handover starts a successor process for `turboretry restart`
// and passes it descriptors: the running process (the parent) execs the new
// binary with the descriptors as inherited files (os/exec ExtraFiles) and a
// Unix socket pair, sends a header describing them over the pair and waits
// for the child to say "ready" (or why it cannot) before its deadline. The
// pair stays open while the parent lives, so the child can tell when its
// predecessor has exited. docs/operations.md describes the whole restart.
//
// Descriptors are inherited at exec, not sent with SCM_RIGHTS: the child is
// the parent's own child, and inheriting needs neither a path another user
// could connect to nor message framing for descriptors.
package handover

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvVar names the environment variable that tells a child it takes over:
// its value is the descriptor number of its end of the socket pair.
const EnvVar = "TURBORETRY_HANDOVER_FD"

// Version is the handover protocol's version; a child refuses another.
const Version = 1

// firstFile is the descriptor of the first ExtraFile: 0..2 are stdio.
const firstFile = 3

// Header describes what the child inherits.
type Header struct {
	Version   int
	ParentPID int
	// Files names the inherited descriptors in order; the first is at
	// descriptor 4 (3 is the socket pair).
	Files []string
	// Values carries what else the child needs (the steering generation,
	// its hash key), as the caller defines them.
	Values map[string]string
}

// maxLine bounds a protocol line: the header, "ready", or a failure.
const maxLine = 64 << 10

// Spec is what Start needs.
type Spec struct {
	Binary string
	Args   []string // without the program name
	// Files are passed in order, named by Names.
	Files  []*os.File
	Names  []string
	Values map[string]string
	// Stdout and Stderr of the child; nil discards.
	Stdout, Stderr io.Writer
	// Timeout bounds how long the child may take to report ready.
	Timeout time.Duration
}

// Child is a successor that reported ready.
type Child struct {
	PID  int
	conn net.Conn
	// Exited is closed when the child exits, Err then says how.
	Exited chan struct{}
	Err    error
}

// ErrNotReady is wrapped by Start when the child failed, exited, or was
// not ready in time; the message says which.
var ErrNotReady = errors.New("the new process did not take over")

// Start execs the successor and waits until it is ready. On any failure
// the child is killed (if it still runs) and reaped, and the error says
// why; the caller keeps serving. The child inherits Spec.Files and its end
// of the socket pair; the parent's copies of Spec.Files stay open.
func Start(ctx context.Context, spec Spec) (*Child, error) {
	if len(spec.Files) != len(spec.Names) {
		return nil, fmt.Errorf("handover: %d files, %d names", len(spec.Files), len(spec.Names))
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("handover: socket pair: %w", err)
	}
	parentEnd, childEnd := os.NewFile(uintptr(fds[0]), "handover-parent"), os.NewFile(uintptr(fds[1]), "handover-child")
	conn, err := net.FileConn(parentEnd)
	_ = parentEnd.Close()
	if err != nil {
		_ = childEnd.Close()
		return nil, fmt.Errorf("handover: %w", err)
	}
	cmd := exec.Command(spec.Binary, spec.Args...)
	cmd.ExtraFiles = append([]*os.File{childEnd}, spec.Files...)
	cmd.Env = append(withoutHandover(os.Environ()), EnvVar+"="+strconv.Itoa(firstFile))
	cmd.Stdout, cmd.Stderr = spec.Stdout, spec.Stderr
	err = cmd.Start()
	_ = childEnd.Close()
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("%w: starting %s: %w", ErrNotReady, spec.Binary, err)
	}
	child := &Child{PID: cmd.Process.Pid, conn: conn, Exited: make(chan struct{})}
	go func() {
		child.Err = cmd.Wait()
		close(child.Exited)
	}()
	fail := func(reason error) (*Child, error) {
		_ = cmd.Process.Kill()
		<-child.Exited
		_ = conn.Close()
		return nil, fmt.Errorf("%w: %w", ErrNotReady, reason)
	}

	hdr := Header{Version: Version, ParentPID: os.Getpid(), Files: spec.Names, Values: spec.Values}
	line, err := json.Marshal(hdr)
	if err != nil {
		return fail(err)
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		// The child may have exited at once (a bad binary): say so.
		select {
		case <-child.Exited:
			return fail(fmt.Errorf("it exited before it was ready (%v; its log says why)", child.Err))
		case <-time.After(time.Second):
			return fail(fmt.Errorf("sending the handover header: %w", err))
		}
	}
	answer := make(chan string, 1)
	go func() {
		r := bufio.NewReaderSize(io.LimitReader(conn, maxLine), 512)
		s, err := r.ReadString('\n')
		if err != nil {
			s = ""
		}
		answer <- strings.TrimSuffix(s, "\n")
	}()
	timer := time.NewTimer(spec.Timeout)
	defer timer.Stop()
	var a string
	select {
	case a = <-answer:
	case <-child.Exited:
		// Its last words may still be on their way: the pair closed
		// with its exit, so the reader returns promptly.
		select {
		case a = <-answer:
		case <-time.After(time.Second):
		}
		if a == "" {
			return fail(fmt.Errorf("it exited before it was ready (%v; its log says why)", child.Err))
		}
	case <-timer.C:
		return fail(fmt.Errorf("it was not ready within %v", spec.Timeout))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	switch {
	case a == "ready":
		select {
		case <-child.Exited:
			return fail(fmt.Errorf("it exited right after saying ready (%v)", child.Err))
		default:
			return child, nil
		}
	case strings.HasPrefix(a, "fail "):
		return fail(errors.New(strings.TrimPrefix(a, "fail ")))
	}
	// The pair closed without an answer: the child exited, or closed it.
	select {
	case <-child.Exited:
		return fail(fmt.Errorf("it exited before it was ready (%v; its log says why)", child.Err))
	case <-time.After(time.Second):
		return fail(errors.New("it closed the handover socket without saying ready"))
	}
}

// Release closes the parent's end of the pair, which tells the child its
// predecessor is gone; exiting does the same.
func (c *Child) Release() error { return c.conn.Close() }

// withoutHandover drops EnvVar from env: a process started fresh from a
// successor must not believe it takes over.
func withoutHandover(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, EnvVar+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Inherited is what a successor received.
type Inherited struct {
	Header Header
	files  map[string]*os.File
	conn   net.Conn

	mu       sync.Mutex
	answered bool
	gone     chan struct{}
}

// Inherit returns what this process inherited from its predecessor, or nil
// when it was started fresh. It unsets EnvVar.
func Inherit() (*Inherited, error) {
	v, ok := os.LookupEnv(EnvVar)
	if !ok {
		return nil, nil
	}
	_ = os.Unsetenv(EnvVar)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < firstFile {
		return nil, fmt.Errorf("handover: %s=%q", EnvVar, v)
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "handover")
	conn, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("handover: the socket pair: %w", err)
	}
	in := &Inherited{conn: conn, files: map[string]*os.File{}, gone: make(chan struct{})}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReaderSize(io.LimitReader(conn, maxLine), 4096)
	line, err := r.ReadString('\n')
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("handover: reading the header: %w", err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	if err := json.Unmarshal([]byte(line), &in.Header); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("handover: the header: %w", err)
	}
	if in.Header.Version != Version {
		err := fmt.Errorf("handover protocol %d, this binary speaks %d", in.Header.Version, Version)
		in.Fail(err)
		return nil, err
	}
	for i, name := range in.Header.Files {
		n := fd + 1 + i
		syscall.CloseOnExec(n)
		in.files[name] = os.NewFile(uintptr(n), name)
	}
	go func() {
		// The parent never writes after the header: EOF (or any error)
		// means it exited or released us.
		_, _ = io.Copy(io.Discard, r)
		close(in.gone)
	}()
	return in, nil
}

// File returns the inherited file of that name, or nil. The caller owns
// it.
func (in *Inherited) File(name string) *os.File {
	f := in.files[name]
	delete(in.files, name)
	return f
}

// Ready tells the predecessor this process serves: it stops accepting and
// drains.
func (in *Inherited) Ready() error { return in.answer("ready") }

// Fail tells the predecessor why this process cannot take over; it keeps
// serving, and the restart command reports err.
func (in *Inherited) Fail(err error) {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	_ = in.answer("fail " + msg)
}

func (in *Inherited) answer(line string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.answered {
		return nil
	}
	in.answered = true
	_, err := in.conn.Write([]byte(line + "\n"))
	return err
}

// PredecessorGone is closed when the predecessor has exited.
func (in *Inherited) PredecessorGone() <-chan struct{} { return in.gone }

// Close closes the files nobody took and the pair.
func (in *Inherited) Close() error {
	for name, f := range in.files {
		_ = f.Close()
		delete(in.files, name)
	}
	return in.conn.Close()
}
