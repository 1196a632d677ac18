//go:build linux

package afxdp

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// leftovers returns the mappings of /proc/self/maps that are the socket's
// rings (named socket:[ino]).
func leftovers(t *testing.T, ino uint64) []string {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	sock := fmt.Sprintf("socket:[%d]", ino)
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.HasSuffix(line, sock) {
			left = append(left, line)
		}
	}
	return left
}

// rssAnon returns the process's resident anonymous memory (RssAnon) in
// bytes: the UMEM is populated at mmap, so every leaked one adds its size.
func rssAnon(t *testing.T) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "RssAnon: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	t.Fatal("no RssAnon in /proc/self/status")
	return 0
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestOpenClose100 opens and closes 100 sockets, one per queue of a
// 100-queue veth (a queue's previous socket is torn down asynchronously, so
// reusing one at once could see EBUSY), and checks that every descriptor is
// closed and every ring and UMEM mapping is gone.
func TestOpenClose100(t *testing.T) {
	const n = 100
	nt := newTestNet(t, n)
	cfg := Config{FrameSize: 4096, NumFrames: 1024, FillRingSize: 32, CompletionRingSize: 32, RXRingSize: 32, TXRingSize: 32}
	nt.in(t, nt.nsB, func() {
		fds := openFDs(t)
		rss := rssAnon(t)
		for q := range n {
			s, err := Open(nt.ifB, q, cfg)
			if err != nil {
				t.Fatalf("Open queue %d: %v", q, err)
			}
			var st unix.Stat_t
			if err := unix.Fstat(s.FD(), &st); err != nil {
				t.Fatal(err)
			}
			if got := leftovers(t, st.Ino); len(got) != 4 {
				t.Fatalf("queue %d: %d ring mappings while open, want 4: %q", q, len(got), got)
			}
			if got := openFDs(t); got != fds+2 {
				t.Fatalf("queue %d: %d descriptors open, want %d (socket + eventfd)", q, got, fds+2)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close queue %d: %v", q, err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if got := leftovers(t, st.Ino); len(got) != 0 {
				t.Fatalf("queue %d: still mapped after Close: %q", q, got)
			}
		}
		if got := openFDs(t); got != fds {
			t.Fatalf("%d descriptors open after 100 sockets, want %d", got, fds)
		}
		// Anonymous UMEM mappings carry no name to look for; leaking them
		// would add 100 x 4 MiB of resident memory, far above what the
		// runtime itself adds here.
		if grown := rssAnon(t) - rss; grown > 100<<20 {
			t.Fatalf("resident memory grew by %d MiB over 100 sockets of 4 MiB UMEM", grown>>20)
		} else {
			t.Logf("resident anonymous memory grew by %d KiB", grown>>10)
		}
	})
}

// TestClosedSocket checks that every method is safe after Close.
func TestClosedSocket(t *testing.T) {
	nt := newTestNet(t, 1)
	nt.in(t, nt.nsB, func() {
		s, err := Open(nt.ifB, 0, smallConfig)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := s.AllocFrame()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s.Frame(d) != nil || s.Receive(make([]Desc, 4)) != 0 || s.Complete() != 0 {
			t.Fatal("closed socket still serves frames")
		}
		if _, ok := s.AllocFrame(); ok {
			t.Fatal("AllocFrame after Close")
		}
		s.Release([]Desc{d})
		s.FreeFrame(d)
		if _, err := s.Transmit([]Desc{d}); err != ErrClosed {
			t.Fatalf("Transmit after Close: %v", err)
		}
		if _, err := s.WaitTimeout(0, Readable); err != ErrClosed {
			t.Fatalf("WaitTimeout after Close: %v", err)
		}
		if _, err := s.Stats(); err != ErrClosed {
			t.Fatalf("Stats after Close: %v", err)
		}
	})
}
