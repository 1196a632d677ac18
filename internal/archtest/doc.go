// Package archtest holds only tests: the import tiers of
// docs/architecture.md ("Layers") checked over every Go file of the module,
// whatever its build constraints, the rule that quic-go, the reference
// peer, never appears in a non-test import, and the bound on quic.Conn's
// method set.
package archtest
