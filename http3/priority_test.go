package http3

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/quic"
)

func TestParsePriority(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		u    int8
		incr bool
	}{
		{nil, 3, false},
		{[]string{""}, 3, false},
		{[]string{"u=0"}, 0, false},
		{[]string{"u=7, i"}, 7, true},
		{[]string{"i"}, 3, true},
		{[]string{"i=?1"}, 3, true},
		{[]string{"i=?0, u=5"}, 5, false},
		{[]string{"u=1", "i"}, 1, true},                                // field lines combined
		{[]string{"u=1, u=6"}, 6, false},                               // the last member wins
		{[]string{"u=8"}, 3, false},                                    // out of range: ignored
		{[]string{"u=-1, i"}, 3, true},                                 // out of range: ignored
		{[]string{"u=2.5"}, 3, false},                                  // a Decimal: ignored
		{[]string{`u="1"`}, 3, false},                                  // a String: ignored
		{[]string{"i=1"}, 3, false},                                    // an Integer, not a Boolean
		{[]string{"u=2;p=1, i;q"}, 2, true},                            // parameters ignored
		{[]string{`u=4, x=(a "b" 1);y, z=:AQID:, w=tok/en`}, 4, false}, // other types skipped
		{[]string{"  u=1 ,\ti  "}, 1, true},                            // whitespace around members
		{[]string{"u=1,"}, 3, false},                                   // a trailing comma: invalid
		{[]string{"U=1"}, 3, false},                                    // keys are lower case
		{[]string{"u=1 i"}, 3, false},                                  // no comma
		{[]string{`u=1, x="unterminated`}, 3, false},                   // the whole field is ignored
		{[]string{"u=1, i=?2"}, 3, false},
		{[]string{"u=0000000000000001"}, 3, false},                // 16 digits
		{[]string{strings.Repeat("u=1,", 300) + "u=2"}, 3, false}, // over the length bound
	} {
		u, incr := parsePriority(tc.in)
		if u != tc.u || incr != tc.incr {
			t.Errorf("parsePriority(%q) = %d, %v; want %d, %v", tc.in, u, incr, tc.u, tc.incr)
		}
	}
}

func FuzzParsePriority(f *testing.F) {
	for _, s := range []string{"u=1, i", "i=?0", `u=4, x=(a "b" 1);y`, "u=2;p=1", ":AQ==:", "*a=-1.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, _ := parsePriority([]string{s})
		if u < 0 || u > 7 {
			t.Fatalf("urgency %d", u)
		}
	})
}

// TestServerAppliesRequestPriority sends four requests whose handlers
// write at the same moment over a link of limited bandwidth, in virtual
// time: the Priority fields decide the order the responses complete in.
// Without them the four would share the link round robin and the
// smallest would finish first.
func TestServerAppliesRequestPriority(t *testing.T) {
	const size = 256 << 10
	for _, tc := range []struct {
		name       string
		priorities [4]string
		sizes      [4]int
		order      [4]int
	}{
		// Urgency first, then non-incremental streams one after the
		// other in stream ID order.
		{"urgency", [4]string{"u=5", "u=1", "u=4", "u=0"}, [4]int{size, size, size, size}, [4]int{3, 1, 2, 0}},
		{"non-incremental", [4]string{"u=3", "u=3", "u=3", "u=3"}, [4]int{size, size / 2, size / 4, size / 8}, [4]int{0, 1, 2, 3}},
		// Incremental streams of one urgency share it round robin: the
		// smaller finishes first.
		{"incremental", [4]string{"u=2, i", "u=2, i", "u=6, i", "u=6, i"}, [4]int{size, size / 2, size / 4, size / 8}, [4]int{1, 0, 3, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testPriorityOrder(t, tc.priorities, tc.sizes, tc.order) })
		})
	}
}

func testPriorityOrder(t *testing.T, priorities [4]string, sizes, order [4]int) {
	n := simnet.New(1, simnet.LinkConfig{Delay: 5 * time.Millisecond, Bandwidth: 1 << 20})
	serverSock, clientSock := n.MustListen("198.18.0.1:443"), n.MustListen("198.18.1.1:4000")
	defer serverSock.Close()
	defer clientSock.Close()
	serverTLS, clientTLS := testCert(t)
	qconf := &quic.Config{InitialStreamReceiveWindow: 1 << 20, InitialConnectionReceiveWindow: 4 << 20, DisablePathMTUDiscovery: true}
	ln, err := quic.Listen(serverSock, ConfigureTLSConfig(serverTLS), qconf)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	started, write := make(chan struct{}, 4), make(chan struct{})
	mux := http.NewServeMux()
	for i := range 4 {
		mux.HandleFunc(fmt.Sprintf("/%d", i), func(w http.ResponseWriter, r *http.Request) {
			started <- struct{}{}
			<-write
			w.Write(make([]byte, sizes[i]))
		})
	}
	s := &Server{Handler: mux}
	defer s.Close()
	go func() {
		if qc, err := ln.Accept(context.Background()); err == nil {
			s.ServeQUICConn(qc)
		}
	}()
	qc, err := quic.Dial(t.Context(), clientSock, net.UDPAddrFromAddrPort(serverSock.LocalAddr().(*net.UDPAddr).AddrPort()), clientTLS, qconf)
	if err != nil {
		t.Fatal(err)
	}
	cc := (&Transport{}).NewClientConn(qc)
	defer cc.CloseWithError(0, "")

	var streams [4]*RequestStream
	for i := range streams {
		str, err := cc.OpenRequestStream(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://localhost/%d", i), nil)
		req.Header.Set("Priority", priorities[i])
		if err := str.SendRequestHeader(req); err != nil {
			t.Fatal(err)
		}
		str.Close()
		streams[i] = str
	}
	for range streams {
		<-started
	}
	done := make(chan int, 4)
	for i, str := range streams {
		go func() {
			rsp, err := str.ReadResponse()
			if err == nil {
				var n int64
				n, err = io.Copy(io.Discard, rsp.Body)
				if err == nil && n != int64(sizes[i]) {
					err = fmt.Errorf("%d bytes", n)
				}
			}
			if err != nil {
				t.Errorf("response %d: %v", i, err)
			}
			done <- i
		}()
	}
	close(write) // every handler writes at once
	var got [4]int
	for k := range got {
		got[k] = <-done
	}
	if got != order {
		t.Errorf("responses completed in the order %v, want %v", got, order)
	}
}
