package fastpath

import (
	"testing"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/offload/agent"
)

// The agent admits connections to this cache and asks it about known CIDs.
var (
	_ agent.CIDCache  = (*Cache)(nil)
	_ agent.CIDLookup = (*Cache)(nil)
)

func TestContainsMatchesLookup(t *testing.T) {
	c, err := New(Key{1, 2, 3}, DefaultCIDLen)
	if err != nil {
		t.Fatal(err)
	}
	cid := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	if c.Contains(cid) {
		t.Fatal("empty cache contains a CID")
	}
	if err := c.Insert(cid); err != nil {
		t.Fatal(err)
	}
	c.Rotate() // now only in PASSIVE: Contains must find and refresh it
	if !c.Contains(cid) {
		t.Fatal("inserted CID not found after one rotation")
	}
	c.Rotate()
	if !c.Contains(cid) {
		t.Fatal("Contains did not refresh the CID into ACTIVE")
	}
}

func TestKeyFromRingMatchesDeriveKey(t *testing.T) {
	root := testutil.Secret(0)
	kr := testutil.KeyRing(t, root)
	if got, want := KeyFromRing(kr), DeriveKey(root); got != want {
		t.Fatalf("KeyFromRing = %x, DeriveKey = %x", got, want)
	}
}
