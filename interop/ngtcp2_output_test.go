package interop

import (
	"slices"
	"testing"
)

func TestNgtcp2Problems(t *testing.T) {
	clean := []string{
		"I00000001 0xb4 pkt rx pkn=0 dcid=0xb4 scid=0xec version=0x00000001 type=Initial len=116",
		"QUIC handshake has completed",
		"HTTP stream 0 closed with error code 256", // H3_NO_ERROR
		"I00000025 0xb4 frm rx 13 1RTT STOP_SENDING(0x05) id=0x0 app_error_code=(unknown)(0x100)",
		"I00000059 0xb4 frm rx 108 1RTT CONNECTION_CLOSE(0x1d) error_code=(unknown)(0x100) frame_type=0 reason_len=0 reason=[]",
		"I00000059 0xb4 frm rx 108 1RTT CONNECTION_CLOSE(0x1c) error_code=NO_ERROR(0x0) frame_type=0 reason_len=0 reason=[]",
		"I00000059 0xb4 frm tx 108 1RTT CONNECTION_CLOSE(0x1c) error_code=PROTOCOL_VIOLATION(0xa) frame_type=0", // ours, sent
		"ngtcp2_conn_read_pkt: ERR_DRAINING",
		"ngtcp2_conn_handle_expiry: ERR_CLOSING",
		"Timer has already expired: 2.9e-05s",
		"Verifying Retry token from [127.0.0.1]:57078",
	}
	bad := []string{
		"ngtcp2_conn_read_pkt: ERR_PROTO",
		"nghttp3_conn_read_stream: ERR_H3_FRAME_UNEXPECTED",
		"gnutls_handshake: A TLS fatal alert has been received.",
		"Could not bind",
		"Unable to generate static secret",
		"Timeout",
		"HTTP stream 0 closed with error code 258",
		"I00000059 0xb4 frm rx 108 1RTT CONNECTION_CLOSE(0x1c) error_code=PROTOCOL_VIOLATION(0xa) frame_type=0 reason_len=0 reason=[]",
		"I00000059 0xb4 frm rx 108 1RTT CONNECTION_CLOSE(0x1c) error_code=CRYPTO_ERROR(0x100) frame_type=6 reason_len=0 reason=[]",
		"I00000059 0xb4 frm rx 108 1RTT CONNECTION_CLOSE(0x1d) error_code=(unknown)(0x101) frame_type=0 reason_len=0 reason=[]",
	}
	var out string
	for i := range max(len(clean), len(bad)) {
		if i < len(clean) {
			out += clean[i] + "\n"
		}
		if i < len(bad) {
			out += bad[i] + "\r\n"
		}
	}
	if got := ngtcp2Problems(out); !slices.Equal(got, bad) {
		t.Errorf("ngtcp2Problems:\n got %q\nwant %q", got, bad)
	}
}

func TestReceivedRetry(t *testing.T) {
	withRetry := "I0 0x48 pkt tx pkn=0 type=Initial len=0\nI0 0x48 pkt rx pkn=0 dcid=0x48 scid=0x3a version=0x00000001 type=Retry len=0\n"
	if !receivedRetry(withRetry) {
		t.Error("Retry received but not detected")
	}
	if receivedRetry("I0 0x48 pkt tx pkn=0 type=Retry len=0\nI0 0x48 pkt rx pkn=0 type=Initial len=116\n") {
		t.Error("no Retry received, but one detected")
	}
}
