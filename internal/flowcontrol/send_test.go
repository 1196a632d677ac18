package flowcontrol

import (
	"errors"
	"testing"
)

func TestSendCreditOnlyIncreases(t *testing.T) {
	c := NewSendCredit(100)
	if c.OnMaxData(50) || c.OnMaxData(100) || c.Limit() != 100 {
		t.Fatal("a smaller or equal MAX_DATA changed the limit")
	}
	if !c.OnMaxData(200) || c.Limit() != 200 {
		t.Fatal("a larger MAX_DATA was ignored")
	}
	if c.OnMaxData(150) || c.Limit() != 200 {
		t.Fatal("a reordered older MAX_DATA lowered the limit")
	}
	mustNil(t, c.Consume(150))
	if c.Available() != 50 || c.Used() != 150 {
		t.Fatalf("available %d used %d", c.Available(), c.Used())
	}
	if err := c.Consume(51); !errors.Is(err, ErrCreditExceeded) || c.Used() != 150 {
		t.Fatalf("overdraft: err %v, used %d", err, c.Used())
	}
	if !c.OnMaxData(1<<64-1) || c.Limit() != MaxOffset {
		t.Fatalf("limit beyond 2^62-1 not clamped: %d", c.Limit())
	}
}

func TestBlockedOncePerLimit(t *testing.T) {
	c := NewSendCredit(100)
	if _, send := c.Blocked(); send {
		t.Fatal("blocked with credit left")
	}
	mustNil(t, c.Consume(100))
	if limit, send := c.Blocked(); !send || limit != 100 {
		t.Fatalf("Blocked = %d, %v; want 100, true", limit, send)
	}
	if _, send := c.Blocked(); send {
		t.Fatal("DATA_BLOCKED repeated for the same limit")
	}
	c.OnMaxData(100) // ignored: same limit, still signalled
	if _, send := c.Blocked(); send {
		t.Fatal("DATA_BLOCKED repeated after an ignored MAX_DATA")
	}
	c.OnMaxData(300)
	if _, send := c.Blocked(); send {
		t.Fatal("blocked right after new credit")
	}
	mustNil(t, c.Consume(200))
	if limit, send := c.Blocked(); !send || limit != 300 {
		t.Fatalf("Blocked at the new limit = %d, %v; want 300, true", limit, send)
	}
}

func TestStreamSender(t *testing.T) {
	conn := NewSendCredit(150)
	a := NewStreamSender(conn, 100)
	b := NewStreamSender(conn, 100)
	if a.Available() != 100 {
		t.Fatalf("available %d, want the stream limit 100", a.Available())
	}
	mustNil(t, a.Consume(100))
	if b.Available() != 50 {
		t.Fatalf("available %d, want the connection's remaining 50", b.Available())
	}
	if err := b.Consume(51); !errors.Is(err, ErrCreditExceeded) || b.Used() != 0 || conn.Used() != 100 {
		t.Fatalf("overdraft: err %v", err)
	}
	if limit, send := a.StreamDataBlocked(); !send || limit != 100 {
		t.Fatalf("STREAM_DATA_BLOCKED = %d, %v", limit, send)
	}
	if _, send := a.StreamDataBlocked(); send {
		t.Fatal("STREAM_DATA_BLOCKED repeated")
	}
	mustNil(t, b.Consume(50))
	if _, send := b.StreamDataBlocked(); send {
		t.Fatal("stream b has stream credit left; only the connection is blocked")
	}
	if limit, send := conn.Blocked(); !send || limit != 150 {
		t.Fatalf("DATA_BLOCKED = %d, %v", limit, send)
	}
	if a.OnMaxStreamData(90) || !a.OnMaxStreamData(200) || a.Limit() != 200 {
		t.Fatal("MAX_STREAM_DATA handling")
	}
	if a.Available() != 0 {
		t.Fatal("stream credit must stay bounded by the blocked connection")
	}
	conn.OnMaxData(1000)
	if a.Available() != 100 || a.Used() != 100 {
		t.Fatalf("available %d used %d", a.Available(), a.Used())
	}
}
