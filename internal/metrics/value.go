package metrics

import (
	"strconv"
	"sync/atomic"
)

// Counter is a monotonically increasing count. The zero value is ready to
// use but is exported only when obtained from a Registry.
type Counter struct {
	v atomic.Uint64
}

// Inc adds one.
func (c *Counter) Inc() { c.v.Add(1) }

// Add adds n. Counters only go up, which is why n is unsigned.
func (c *Counter) Add(n uint64) { c.v.Add(n) }

// Value returns the current count.
func (c *Counter) Value() uint64 { return c.v.Load() }

func (c *Counter) appendValue(b []byte) []byte { return strconv.AppendUint(b, c.v.Load(), 10) }

// Gauge is a value that goes up and down, such as connections in progress.
// It holds an integer: everything the server measures this way is a count.
type Gauge struct {
	v atomic.Int64
}

// Set replaces the value.
func (g *Gauge) Set(n int64) { g.v.Store(n) }

// Add adds n, which may be negative.
func (g *Gauge) Add(n int64) { g.v.Add(n) }

// Inc adds one.
func (g *Gauge) Inc() { g.v.Add(1) }

// Dec subtracts one.
func (g *Gauge) Dec() { g.v.Add(-1) }

// Value returns the current value.
func (g *Gauge) Value() int64 { return g.v.Load() }

func (g *Gauge) appendValue(b []byte) []byte { return strconv.AppendInt(b, g.v.Load(), 10) }

// value is what a family holds per label combination.
type value interface {
	appendValue(b []byte) []byte
}
