package http3

import (
	"net/http"
	"sync"
	"testing"
)

// TestCloseIdleConnectionsDuringRequests calls CloseIdleConnections in a
// loop while requests run on the same Transport. Run with -race: the
// pool and the connections' request counts must be read under their
// locks, and a connection that a request has just taken from the pool
// must not be closed under it (every request must succeed).
func TestCloseIdleConnectionsDuringRequests(t *testing.T) {
	checkGoroutines(t)
	_, addr, clientTLS := startServer(t, testHandler())
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	client := &http.Client{Transport: tr}
	url := "https://" + addr + "/hello"

	const workers, perWorker = 4, 25
	stop := make(chan struct{})
	closerDone := make(chan struct{})
	go func() {
		defer close(closerDone)
		for {
			select {
			case <-stop:
				return
			default:
				tr.CloseIdleConnections()
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				b, err := get(t, client, url)
				if err == nil && b != "hello HTTP/3.0" {
					t.Errorf("body %q", b)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-closerDone
	close(errs)
	for err := range errs {
		t.Errorf("request failed while CloseIdleConnections ran: %v", err)
	}
}
