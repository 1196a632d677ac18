package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/turboretry/turboretry/app/fileserver"
	"github.com/turboretry/turboretry/internal/fsutil"
	"github.com/turboretry/turboretry/internal/handover"
	"github.com/turboretry/turboretry/offload/reuseport"
)

func init() {
	register(&command{
		name:    "restart",
		summary: "replace a running serve by a new process (a new binary) without dropping connections",
		run:     runRestart,
	})
}

const restartSynopsis = "turboretry restart --pid-file FILE [--state-dir DIR] [--binary PATH] [--timeout D] [-- serve ARGS...]\n\n" +
	"Asks the `turboretry serve --pid-file FILE` whose process ID FILE holds to start PATH\n" +
	"(default: the executable it runs, as it is now on disk) with its own arguments (or, after\n" +
	"--, the serve command line given there, which must keep --pid-file) and hand it\n" +
	"its listening sockets and its sk_reuseport steering program. Once the new process is ready\n" +
	"it takes every new connection, and the old one stops accepting, finishes its requests and\n" +
	"connections (GOAWAY for HTTP/3, graceful close for HTTPS) and exits when they are done or\n" +
	"after its --drain-timeout. If the new process fails or is not ready within --timeout, it is\n" +
	"killed, the old one keeps serving, and restart exits 1 with the reason. --state-dir must be\n" +
	"serve's (the same default). Needs the steering program (root or CAP_BPF); with --offload\n" +
	"xdp the old process gives the interface up for the new one's program (not with --fastpath\n" +
	"bloom), and it refuses while the process before the previous restart is still draining\n" +
	"(docs/operations.md)."

// restartControlName is the control socket's name in the state directory.
func restartControlName(stateDir string, pid int) string {
	return filepath.Join(stateDir, "restart-"+strconv.Itoa(pid)+".sock")
}

// restartRequest is what `turboretry restart` sends; restartReply what it
// gets back.
type restartRequest struct {
	Binary  string        `json:"binary,omitempty"`
	Args    []string      `json:"args,omitempty"` // the successor's command line after the program name`
	Timeout time.Duration `json:"timeout"`
}

type restartReply struct {
	PID        int           `json:"pid,omitempty"`
	Generation int           `json:"generation,omitempty"`
	Took       time.Duration `json:"took,omitempty"`
	Drain      time.Duration `json:"drain,omitempty"`
	Error      string        `json:"error,omitempty"`
}

func runRestart(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("restart", restartSynopsis, stderr)
	pidFile := flags.String("pid-file", "", "the running serve's `FILE` (serve --pid-file)")
	stateDir := flags.String("state-dir", "", "serve's state `DIR` (default as serve's)")
	binary := flags.String("binary", "", "start `PATH` instead of the running executable")
	timeout := flags.Duration("timeout", 60*time.Second, "how long the new process may take to be ready (`D`)")
	// After "--" comes the successor's command line, not restart's flags.
	var serveArgs []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, serveArgs = args[:i], args[i+1:]
	}
	pos, err := parseArgs(flags, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		return usageError(flags, "unexpected argument %q (a new serve command line goes after --)", pos[0])
	}
	pos = serveArgs
	if len(pos) > 0 && pos[0] != "serve" {
		return usageError(flags, "unexpected argument %q (a new command line starts with serve)", pos[0])
	}
	if len(pos) > 0 && !slices.ContainsFunc(pos, func(a string) bool {
		return strings.HasPrefix(a, "--pid-file") || strings.HasPrefix(a, "-pid-file")
	}) {
		return usageError(flags, "the new serve command line needs --pid-file, or no later restart could find it")
	}
	if *pidFile == "" {
		return usageError(flags, "--pid-file is required")
	}
	if *timeout <= 0 {
		return usageError(flags, "--timeout must be positive")
	}
	if *stateDir == "" {
		if *stateDir, err = fileserver.DefaultStateDir(); err != nil {
			fmt.Fprintln(stderr, "restart:", err)
			return exitFail
		}
	}
	if *binary != "" {
		if *binary, err = filepath.Abs(*binary); err != nil {
			fmt.Fprintln(stderr, "restart:", err)
			return exitFail
		}
	}
	pid, err := readPIDFile(*pidFile)
	if err != nil {
		fmt.Fprintln(stderr, "restart:", err)
		return exitFail
	}
	reply, err := askRestart(ctx, restartControlName(*stateDir, pid), restartRequest{Binary: *binary, Args: pos, Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "restart: pid %d: %v\n", pid, err)
		return exitFail
	}
	if reply.Error != "" {
		fmt.Fprintf(stderr, "restart: failed, pid %d keeps serving: %s\n", pid, reply.Error)
		return exitFail
	}
	fmt.Fprintf(stdout, "restarted: pid %d serves (generation %d, ready after %v); pid %d drains for at most %v\n",
		reply.PID, reply.Generation, reply.Took.Round(time.Millisecond), pid, reply.Drain)
	return exitOK
}

func readPIDFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s holds %q, not a process ID", path, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

func askRestart(ctx context.Context, path string, req restartRequest) (*restartReply, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("no restart control socket (is it serve --pid-file, with this --state-dir?): %w", err)
	}
	defer conn.Close()
	// The server answers within req.Timeout, plus its handover steps.
	_ = conn.SetDeadline(time.Now().Add(req.Timeout + 30*time.Second))
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return nil, err
	}
	var reply restartReply
	if err := json.NewDecoder(bufio.NewReader(io.LimitReader(conn, 64<<10))).Decode(&reply); err != nil {
		return nil, fmt.Errorf("no answer: %w", err)
	}
	return &reply, nil
}

// restarter is serve's side of restarts: the pid file, the control socket
// `turboretry restart` talks to, and the handover to a successor.
type restarter struct {
	srv          *fileserver.Server
	log          *slog.Logger
	pidFile      string
	stateDir     string
	drainTimeout time.Duration
	inherited    *handover.Inherited // the predecessor, when this process is a successor
	drain        context.CancelFunc  // ends Serve gracefully

	mu         sync.Mutex
	ln         net.Listener
	busy       bool
	handedOver bool
}

// start writes the pid file and opens the control socket; called once
// HTTP/3 serves.
func (r *restarter) start() error {
	if err := fsutil.WriteFileAtomic(r.pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644, true); err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	path := restartControlName(r.stateDir, os.Getpid())
	_ = os.Remove(path) // a stale one of an earlier process with this ID
	if err := os.MkdirAll(r.stateDir, 0o700); err != nil {
		return err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("restart control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return err
	}
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	go r.accept(ln)
	if err := r.srv.CanHandOver(); err != nil {
		r.log.Warn("restart: turboretry restart will be refused", "reason", err)
	}
	return nil
}

// stop closes the control socket and removes the pid file if it still
// names this process.
func (r *restarter) stop() {
	r.closeControl()
	if pid, err := readPIDFile(r.pidFile); err == nil && pid == os.Getpid() {
		_ = os.Remove(r.pidFile)
	}
}

func (r *restarter) closeControl() {
	r.mu.Lock()
	ln := r.ln
	r.ln = nil
	r.mu.Unlock()
	if ln != nil {
		ln.Close() // removes the socket file
	}
}

func (r *restarter) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go r.serveControl(c)
	}
}

func (r *restarter) serveControl(c net.Conn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var req restartRequest
	if err := json.NewDecoder(io.LimitReader(c, 64<<10)).Decode(&req); err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if req.Timeout <= 0 || req.Timeout > 10*time.Minute {
		req.Timeout = 60 * time.Second
	}
	reply := r.restart(req)
	_ = json.NewEncoder(c).Encode(reply)
	if reply.Error == "" {
		// Handed over: stop accepting and drain.
		r.closeControl()
		r.srv.Drain(r.drainTimeout)
		r.drain()
	}
}

// restart hands over to a successor, or says why not.
func (r *restarter) restart(req restartRequest) restartReply {
	r.mu.Lock()
	switch {
	case r.handedOver:
		r.mu.Unlock()
		return restartReply{Error: "this process has handed over already and drains"}
	case r.busy:
		r.mu.Unlock()
		return restartReply{Error: "a restart is in progress"}
	}
	r.busy = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.busy = false
		r.mu.Unlock()
	}()
	fail := func(err error) restartReply {
		r.log.Error("restart failed; this process keeps serving", "err", err)
		return restartReply{Error: err.Error()}
	}
	if r.inherited != nil {
		select {
		case <-r.inherited.PredecessorGone():
		default:
			return fail(fmt.Errorf("the process before the last restart (pid %d) still drains its connections; restart again once it has exited (at most its --drain-timeout)",
				r.inherited.Header.ParentPID))
		}
	}
	binary := req.Binary
	if binary == "" {
		var err error
		if binary, err = os.Executable(); err != nil {
			return fail(fmt.Errorf("finding this executable: %w", err))
		}
	}
	in, err := r.srv.Handover()
	if err != nil {
		return fail(err)
	}
	defer in.Close() // the child has its copies
	files := []*os.File{in.TCP}
	names := []string{"tcp"}
	if in.Metrics != nil {
		files, names = append(files, in.Metrics), append(names, "metrics")
	}
	files = append(files, in.Steering.Files...)
	for i := range in.Steering.Files {
		names = append(names, "steering-"+strconv.Itoa(i))
	}
	values := map[string]string{
		"generation": strconv.Itoa(in.Steering.Generation),
		"workers":    strconv.Itoa(in.Steering.Workers),
		"hash-k0":    strconv.FormatUint(in.Steering.HashKey[0], 10),
		"hash-k1":    strconv.FormatUint(in.Steering.HashKey[1], 10),
	}
	args := os.Args[1:]
	if len(req.Args) > 0 {
		args = req.Args
	}
	// The XDP program slot and the receive queues' AF_XDP sockets take one
	// owner each: give them up so the successor can attach its own. Until it
	// has, the kernel stack sees every packet (our connections' as before;
	// Initials meet the host's own Retry policy, as when the agent fails
	// open).
	if err := r.srv.ReleaseOffload(); err != nil {
		return fail(fmt.Errorf("handing the XDP offload over: %w", err))
	}
	r.log.Info("restart: starting the new process", "binary", binary, "args", strings.Join(args, " "), "timeout", req.Timeout)
	began := time.Now()
	child, err := handover.Start(context.Background(), handover.Spec{
		Binary: binary, Args: args, Files: files, Names: names, Values: values,
		Stdout: os.Stdout, Stderr: os.Stderr, Timeout: req.Timeout,
	})
	took := time.Since(began)
	if err != nil {
		// The child may have switched the steering before it failed.
		if terr := r.srv.TakeBack(); terr != nil {
			err = errors.Join(err, fmt.Errorf("taking new connections back: %w", terr))
		}
		// It has been reaped: its program and sockets are gone.
		if oerr := r.srv.ReacquireOffload(); oerr != nil {
			r.log.Error("restart: the XDP offload could not be started again; serving without it (the host validates addresses itself)", "err", oerr)
			err = errors.Join(err, fmt.Errorf("starting the XDP offload again (serving without it): %w", oerr))
		}
		return fail(err)
	}
	r.mu.Lock()
	r.handedOver = true
	r.mu.Unlock()
	go func() {
		<-child.Exited
		r.log.Warn("restart: the new process exited", "pid", child.PID, "err", child.Err)
	}()
	r.log.Info("restart: the new process serves; draining", "pid", child.PID, "ready_after", took, "drain_timeout", r.drainTimeout)
	return restartReply{PID: child.PID, Generation: 1 - in.Steering.Generation, Took: took, Drain: r.drainTimeout}
}

// inheritance turns what a successor inherited into the server's
// configuration.
func inheritance(in *handover.Inherited) (*fileserver.Inheritance, error) {
	v := in.Header.Values
	gen, err1 := strconv.Atoi(v["generation"])
	workers, err2 := strconv.Atoi(v["workers"])
	k0, err3 := strconv.ParseUint(v["hash-k0"], 10, 64)
	k1, err4 := strconv.ParseUint(v["hash-k1"], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, fmt.Errorf("handover values %v: %w", v, err)
	}
	out := &fileserver.Inheritance{
		TCP:      in.File("tcp"),
		Metrics:  in.File("metrics"),
		Steering: &reuseport.Inheritance{Generation: gen, Workers: workers, HashKey: [2]uint64{k0, k1}},
	}
	for i := range reuseport.InheritedFiles {
		f := in.File("steering-" + strconv.Itoa(i))
		if f == nil {
			out.Close()
			return nil, fmt.Errorf("handover: steering descriptor %d missing", i)
		}
		out.Steering.Files = append(out.Steering.Files, f)
	}
	if out.TCP == nil {
		out.Close()
		return nil, errors.New("handover: no TCP listener")
	}
	return out, nil
}
