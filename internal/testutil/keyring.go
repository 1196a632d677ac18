package testutil

import (
	"testing"

	"github.com/turboretry/turboretry/token"
)

// Secret returns a token root secret (token.SecretLen bytes) whose byte i
// is first+i: a fixed secret, so that a failure reproduces, and a
// different first for each party of a test that needs distinct ones.
func Secret(first byte) []byte {
	root := make([]byte, token.SecretLen)
	for i := range root {
		root[i] = first + byte(i)
	}
	return root
}

// KeyRing returns the token key ring of root at epoch 0, failing the test
// if root is refused.
func KeyRing(tb testing.TB, root []byte) *token.KeyRing {
	tb.Helper()
	kr, err := token.NewKeyRing(root, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return kr
}
