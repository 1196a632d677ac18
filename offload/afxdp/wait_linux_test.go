//go:build linux

package afxdp

import (
	"context"
	"errors"
	"github.com/turboretry/turboretry/offload/frame"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestWait(t *testing.T) {
	e := newXSKEnv(t, smallConfig)
	s := e.xsk

	// Nothing arrives: the timeout ends the wait with no condition.
	if r, err := s.WaitTimeout(10*time.Millisecond, Readable); err != nil || r != 0 {
		t.Fatalf("idle WaitTimeout = %v, %v", r, err)
	}
	// An empty TX ring is writable at once.
	if r, err := s.Wait(context.Background(), Writable); err != nil || r&Writable == 0 {
		t.Fatalf("Wait(Writable) = %v, %v", r, err)
	}
	// Cancellation wakes a blocked Wait.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := s.Wait(ctx, Readable); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel: %v", err)
	}
	// So does a deadline, and an already ended context returns at once.
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Wait(ctx, Readable); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past deadline: %v", err)
	}
	if _, err := s.Wait(ctx, Readable); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on ended context: %v", err)
	}

	// A datagram arriving while Wait blocks wakes it with Readable.
	var fdA int
	e.in(t, e.nsA, func() {
		fdA = udpSocket(t, netip.AddrPortFrom(ipA, portA), netip.AddrPortFrom(ipB, portB))
	})
	time.AfterFunc(20*time.Millisecond, func() { _, _ = unix.Write(fdA, []byte("wake")) })
	ctx, cancel = context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for {
		r, err := s.Wait(ctx, Readable)
		if err != nil {
			t.Fatalf("Wait for a datagram: %v", err)
		}
		if r&Readable == 0 {
			t.Fatalf("Wait returned %v without Readable", r)
		}
		batch := make([]Desc, 8)
		n := s.Receive(batch)
		found := false
		for _, d := range batch[:n] {
			if f, err := frame.Parse(s.Frame(d)); err == nil && string(f.Payload) == "wake" {
				found = true
			}
		}
		s.Release(batch[:n])
		if found {
			return
		}
	}
}
