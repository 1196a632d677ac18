package servebench

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/turboretry/turboretry/app/fileserver"
)

var idleProfileDir = flag.String("servebench.idleprofile", "", "TestIdleConnProfile writes its heap and goroutine profiles here (the test is skipped without it)")

// TestIdleConnProfile is the breakdown behind BenchmarkIdleConnMemory
// (docs/performance.md "Idle connection memory"): the file server runs in
// this process with every allocation sampled, *idleConns quic-go HTTP/3
// clients make one small request each, and after 2 s the heap (with
// heap-base.pb.gz, taken before the clients, to give pprof as -base) and
// the goroutines are written to -servebench.idleprofile. The clients'
// allocations are in the profile too: ignore quic-go's frames in pprof.
func TestIdleConnProfile(t *testing.T) {
	if *idleProfileDir == "" {
		t.Skip("-servebench.idleprofile not set")
	}
	runtime.MemProfileRate = 1
	setup(t)
	lim := fileserver.DefaultLimits()
	lim.PrefixAdmission = false
	addr := freePort(t)
	s, err := fileserver.New(fileserver.Config{
		Addr:     addr,
		Root:     filepath.Join(workDir, "site"),
		CertFile: filepath.Join(workDir, "cert.pem"),
		KeyFile:  filepath.Join(workDir, "key.pem"),
		StateDir: t.TempDir(),
		Limits:   &lim,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	<-s.HTTP3Ready()
	srv := &server{name: "in-process", addr: addr}
	warm := newH3Client()
	if err := fetchOnce(warm, srv.url(tinyFile), fileSizes[tinyFile]); err != nil {
		t.Fatal(err)
	}
	closeClient(warm)
	time.Sleep(time.Second)
	writeProfile(t, "heap", "heap-base.pb.gz")
	clients := make([]*http.Client, *idleConns)
	for i := range clients {
		clients[i] = newH3Client()
		if err := fetchOnce(clients[i], srv.url(tinyFile), fileSizes[tinyFile]); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	time.Sleep(2 * time.Second)
	writeProfile(t, "heap", "heap.pb.gz")
	writeProfile(t, "goroutine", "goroutine.txt")
	for _, c := range clients {
		closeClient(c)
	}
}

func writeProfile(t *testing.T, name, file string) {
	t.Helper()
	runtime.GC()
	f, err := os.Create(filepath.Join(*idleProfileDir, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	debug := 0
	if name == "goroutine" {
		debug = 1
	}
	if err := pprof.Lookup(name).WriteTo(f, debug); err != nil {
		t.Fatal(err)
	}
}
