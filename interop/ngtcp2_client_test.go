package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/app/fileserver"
)

// TestNgtcp2ClientDownloadsFromOurServer has ngtcp2's gtlsclient fetch a
// 1 MiB random file from our file server over HTTP/3 with Retry: always,
// and checks the bytes, ngtcp2's output, and our access log.
func TestNgtcp2ClientDownloadsFromOurServer(t *testing.T) {
	client := findPeer(t, "gtlsclient")
	ctx, cancel := context.WithTimeout(t.Context(), peerTestTimeout)
	defer cancel()

	root := t.TempDir()
	sum := writeRandomFile(t, root, "blob.bin", blobSize)
	srv, err := StartServer(ctx, fileserver.Config{Root: root, Retry: fileserver.RetryAlways, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	dl := t.TempDir()
	port := fmt.Sprint(srv.Port())
	p := startPeer(ctx, t, client,
		"--exit-on-all-streams-close", // otherwise it idles until --timeout
		"--download="+dl,
		"--no-quic-dump", "--no-http-dump", // keep the packet log, not the bytes
		"--timeout=10s", "--handshake-timeout=5s",
		"127.0.0.1", port, "https://127.0.0.1:"+port+"/blob.bin")
	if err := p.wait(ctx); err != nil {
		t.Errorf("gtlsclient: %v", err)
	}
	out := p.output(t)
	for _, line := range ngtcp2Problems(out) {
		t.Errorf("gtlsclient reported: %s", line)
	}

	got, err := os.ReadFile(filepath.Join(dl, "blob.bin"))
	if err != nil {
		t.Errorf("gtlsclient saved nothing: %v", err)
	} else {
		checkSameContent(t, "downloaded blob.bin", got, blobSize, sum)
	}
	if t.Failed() {
		p.logTail(t, 40)
	}

	rec, err := waitRequest(ctx, srv, "/blob.bin")
	if err != nil {
		t.Fatalf("%v; server log:\n%s", err, srv.Log())
	}
	if rec.Protocol != "HTTP/3.0" || rec.Status != 200 || rec.Bytes != blobSize {
		t.Errorf("access log: protocol %q status %d bytes %d, want HTTP/3.0 200 %d", rec.Protocol, rec.Status, rec.Bytes, blobSize)
	}
	checkRetryValidated(t, rec, out)
}

// checkRetryValidated is the Retry assertion of the ngtcp2 client test:
// with Retry: always, the access log must say the address was validated by
// a Retry, and gtlsclient must have received one.
func checkRetryValidated(t *testing.T, rec AccessRecord, clientOut string) {
	t.Helper()
	if !rec.RetryValidated {
		t.Errorf("access log: retry_validated=false with Retry: always: %+v", rec)
	}
	if !receivedRetry(clientOut) {
		t.Error("gtlsclient output shows no Retry packet received")
	}
}

// receivedRetry reports whether ngtcp2's packet log shows a Retry
// received ("pkt rx ... type=Retry").
func receivedRetry(out string) bool {
	for line := range strings.Lines(out) {
		if strings.Contains(line, " pkt rx ") && strings.Contains(line, "type=Retry") {
			return true
		}
	}
	return false
}
