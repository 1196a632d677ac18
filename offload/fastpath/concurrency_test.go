package fastpath

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentRefreshNeverMisses runs readers that insert their own CIDs
// and keep looking them up while another goroutine rotates as fast as it
// can. The contract checked: a CID refreshed (inserted, or found by a
// lookup) while the generation was g sits in the table that is ACTIVE at
// some generation g' >= g, and that table is cleared only by the rotation
// that takes the generation from g'+1 to g'+2. So if, when the next lookup
// ends, at most g+1 rotations have *started*, that lookup must hit. (Counting
// completed rotations instead would be wrong: the clear runs before the
// generation moves.) Run it with -race.
func TestConcurrentRefreshNeverMisses(t *testing.T) {
	c := newTestCache(t)
	const (
		workers   = 4
		cids      = 64
		rotations = 8 // the workers run until the rotator has done these
	)
	var started atomic.Uint64 // rotations begun, incremented before each clear
	// The rotator waits before each rotation until every worker finished
	// one more pass over its CIDs (passes), so that lookups run between
	// and during rotations whatever the scheduler does; abort stops both
	// sides after a failure.
	var passes atomic.Int64
	var abort atomic.Bool
	go func() {
		for r := range rotations {
			for passes.Load() < int64(r+1)*workers && !abort.Load() {
				runtime.Gosched()
			}
			if abort.Load() {
				return
			}
			started.Add(1)
			c.Rotate()
		}
	}()

	var checked, skipped atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine [cids][]byte
			var since [cids]uint64 // generation read before the last refresh
			for i := range mine {
				mine[i] = binary.LittleEndian.AppendUint64(nil, uint64(w)<<32|uint64(i))
				since[i] = c.Generation()
				if err := c.Insert(mine[i]); err != nil {
					t.Error(err)
					abort.Store(true)
					return
				}
			}
			for c.Generation() < rotations && !abort.Load() {
				for i, cid := range mine {
					before := c.Generation()
					hit := c.Lookup(cid)
					after := started.Load()
					switch {
					case after <= since[i]+1:
						checked.Add(1)
						if !hit {
							t.Errorf("worker %d CID %d: miss: refreshed at generation %d, %d rotations started", w, i, since[i], after)
							abort.Store(true)
							return
						}
					case !hit:
						// Legitimately aged out: two rotations passed
						// without a refresh. Re-insert it.
						skipped.Add(1)
						before = c.Generation()
						_ = c.Insert(cid)
					}
					since[i] = before
				}
				passes.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d lookups checked, %d aged out legitimately, %d rotations", checked.Load(), skipped.Load(), c.Generation())
	if checked.Load() == 0 {
		t.Fatal("no lookup ran within one rotation of its refresh; the test checked nothing")
	}
}

// TestConcurrentInsertLookup races inserts, lookups and exports of
// disjoint and shared CIDs without rotation: every inserted CID must hit.
func TestConcurrentInsertLookup(t *testing.T) {
	c := newTestCache(t)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newCIDStream(uint64(w % 4)) // pairs of workers share CIDs
			var buf [8]byte
			for i := range 5000 {
				cid := s.next(buf[:])
				_ = c.Insert(cid)
				if !c.Lookup(cid) {
					t.Errorf("worker %d: CID #%d missed right after insert", w, i)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 3 {
			if _, err := c.AppendTable(nil, c.ActiveIndex()); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
}
