package udpio

import (
	"testing"
)

// TestBatchAPI runs the public API end to end on whatever implementation this system
// builds (recvmmsg/sendmmsg on Linux, one datagram per call elsewhere).
func TestBatchAPI(t *testing.T) {
	sc := listenUDP(t, "udp4", "127.0.0.1:0")
	rc := listenUDP(t, "udp4", "127.0.0.1:0")
	caps := setupConn(t, rc, Config{DisableGRO: true})
	if caps.RecvBuffer <= 0 {
		t.Fatalf("no receive buffer size reported: %+v", caps)
	}
	w, r := writerReader(t, sc, WriterConfig{Batch: 8}, rc, 8)
	var want [][]byte
	var msgs []Message
	for i := range 20 {
		want = append(want, payload(i, 50+i*60))
		msgs = append(msgs, Message{Buf: want[i], Addr: addrPort(rc)})
	}
	if n, err := w.WriteBatch(msgs); n != len(msgs) || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	checkDatagrams(t, readDatagrams(t, rc, r, len(want), 2048), want, addrPort(sc))

	bad := append([]Message{msgs[0]}, Message{Buf: []byte("no address")})
	if n, err := w.WriteBatch(bad); n != 1 || !errorsIs(err, ErrInvalidAddr) {
		t.Fatalf("WriteBatch with a bad message = %d, %v", n, err)
	}
}
