package interop

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/quic"
)

// TestOurClientDownloadsFromNgtcp2Server has our HTTP/3 client fetch a
// 1 MiB random file from ngtcp2's gtlsserver, which sends a Retry for
// every new connection (-V): the download only completes if our client
// follows the Retry correctly (RFC 9000, Sections 8.1.2 and 17.2.5).
func TestOurClientDownloadsFromNgtcp2Server(t *testing.T) {
	server := findPeer(t, "gtlsserver")
	ctx, cancel := context.WithTimeout(t.Context(), peerTestTimeout)
	defer cancel()

	dir := t.TempDir()
	keyFile, certFile, pool := writeSelfSignedCert(t, dir)
	root := t.TempDir()
	sum := writeRandomFile(t, root, "blob.bin", blobSize)

	p, port := startPeerOnFreePort(ctx, t, server, func(port int) []string {
		return []string{
			"-V", // address validation: a Retry before every connection
			"-d", root,
			"--no-quic-dump", "--no-http-dump",
			"--timeout=10s",
			"127.0.0.1", fmt.Sprint(port), keyFile, certFile}
	})

	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		QUICConfig:      &quic.Config{HandshakeIdleTimeout: 5 * time.Second},
	}
	defer tr.Close()
	url := fmt.Sprintf("https://127.0.0.1:%d/blob.bin", port)
	defer func() {
		if t.Failed() {
			p.logTail(t, 40)
		}
	}()
	status, proto, body := fetchHTTP3(ctx, t, tr, url)
	if status != http.StatusOK || proto != "HTTP/3.0" {
		t.Errorf("response: %s %d, want HTTP/3.0 200", proto, status)
	}
	checkSameContent(t, "body of /blob.bin", body, blobSize, sum)

	// Close our connection (H3_NO_ERROR) and wait for the server to take
	// it in, so that the output checked below covers the whole connection.
	tr.Close()
	if err := p.waitOutput(ctx, "Draining period has started"); err != nil {
		t.Errorf("gtlsserver did not see our CONNECTION_CLOSE: %v", err)
	}
	out := p.output(t)
	for _, want := range []string{"Sending Retry packet", "Verifying Retry token", "Token was successfully validated"} {
		if !strings.Contains(out, want) {
			t.Errorf("gtlsserver output lacks %q: the Retry round trip did not happen as expected", want)
		}
	}
	for _, line := range ngtcp2Problems(out) {
		t.Errorf("gtlsserver reported: %s", line)
	}
}
