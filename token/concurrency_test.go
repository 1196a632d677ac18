package token

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// Many goroutines issue and validate at once, each with its own Issuer and
// Validator, sharing one KeyRing and one small KeyCache (so entries are
// evicted while others read them), all starting on an epoch nobody has
// derived yet. Run with -race.
func TestConcurrentIssueValidate(t *testing.T) {
	kr, err := NewKeyRing(vecRoot(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cache := NewKeyCache(64)
	const workers, perWorker = 8, 300
	base := time.UnixMilli(1_800_000_000_000)
	shared := make(chan []byte, workers*perWorker)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				is, err := kr.NewIssuer(Source(1 + w%2))
				if err != nil {
					return err
				}
				v, err := kr.NewValidator(ValidatorConfig{Cache: cache})
				if err != nil {
					return err
				}
				from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(w)}), 443)
				buf := make([]byte, MaxPayloadLen)
				dcid := []byte{byte(w), 1, 2, 3, 4, 5, 6, 7}
				for i := range perWorker {
					// 7 ms steps cross second and epoch boundaries.
					now := base.Add(time.Duration(i*7) * time.Millisecond)
					tok, err := is.AppendRetry(nil, from, dcid, dcid, now)
					if err != nil {
						return err
					}
					res, err := v.Validate(tok, TypeRetry, from, now, buf)
					if err != nil {
						return fmt.Errorf("worker %d token %d: %v", w, i, err)
					}
					if res.ODCID[0] != byte(w) {
						return fmt.Errorf("worker %d: ODCID %x", w, res.ODCID)
					}
					shared <- tok
					// Validate someone else's token too (any is fine). The
					// workers' simulated clocks drift apart, so a foreign
					// token may be too old or too new for this one's now.
					select {
					case other := <-shared:
						if _, err := v.Inspect(other, TypeRetry, now, buf); err != nil && ReasonOf(err) != ReasonExpired && ReasonOf(err) != ReasonFromFuture {
							return fmt.Errorf("worker %d: foreign token: %v", w, err)
						}
					default:
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
