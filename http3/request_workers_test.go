package http3

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// goroutineID parses the running goroutine's number from its stack header.
func goroutineID(t *testing.T) uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf, _ = bytes.CutPrefix(buf, []byte("goroutine "))
	id, err := strconv.ParseUint(string(buf[:bytes.IndexByte(buf, ' ')]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestRequestWorkersReuse: a request that comes while a worker waits runs
// on that worker, not on a new goroutine; two at once run on two; a
// worker left idle for workerIdleTimeout ends, and stop ends the rest.
func TestRequestWorkersReuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw requestWorkers
		var mu sync.Mutex
		var ids []uint64
		record := func() {
			mu.Lock()
			ids = append(ids, goroutineID(t))
			mu.Unlock()
		}
		rw.run(record)
		synctest.Wait() // the worker ran it and waits for the next
		rw.run(record)
		synctest.Wait()
		if ids[0] != ids[1] {
			t.Errorf("second request on goroutine %d, first on %d: the worker was not reused", ids[1], ids[0])
		}

		// Two at once: the waiting worker takes one, a new one the other.
		release := make(chan struct{})
		block := func() { record(); <-release }
		rw.run(block)
		rw.run(block)
		synctest.Wait()
		close(release)
		synctest.Wait()
		if ids[2] == ids[3] {
			t.Errorf("concurrent requests both on goroutine %d", ids[2])
		}

		// After the idle timeout both workers are gone: a request starts
		// a new one.
		time.Sleep(workerIdleTimeout + time.Millisecond)
		synctest.Wait()
		rw.run(record)
		synctest.Wait()
		if ids[4] == ids[2] || ids[4] == ids[3] {
			t.Errorf("request after the idle timeout on an old worker (goroutine %d)", ids[4])
		}

		// stop ends the waiting worker (synctest.Test fails on one left).
		rw.stop()
		synctest.Wait()
	})
}

// goroutinesCreated is the process's count of goroutines created so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestRequestsReuseGoroutines: sequential requests on one connection start
// (almost) no goroutines in the server. Before request workers each one
// started two: its handler's, and the one context.AfterFunc starts when
// the response's FIN ends the stream's context.
func TestRequestsReuseGoroutines(t *testing.T) {
	_, addr, clientTLS := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	c := &http.Client{Transport: tr}
	get := func() {
		rsp, err := c.Get("https://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, rsp.Body)
		rsp.Body.Close()
	}
	get() // the handshake and the connection's own goroutines
	const requests = 50
	before := goroutinesCreated()
	for range requests {
		get()
	}
	created := goroutinesCreated() - before
	t.Logf("%d goroutines created for %d requests (client and server)", created, requests)
	if created > requests/2 {
		t.Errorf("%d goroutines created for %d sequential requests, want at most %d", created, requests, requests/2)
	}
}
