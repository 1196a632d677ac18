// Package abuse is the abuse suite of issue 11: the attacks an outside
// client can mount against `turboretry serve`, each a bounded test against
// the real binary (built without the race detector and run as a child
// process on loopback with its default limits), from an attacker in the
// test process. Each test asserts the server's bound (resident memory from
// /proc, live connections and Retries from its /metrics, goroutines from a
// stack dump, open files) and that a benign HTTP/3 fetch, with quic-go's
// client and ours, completes during the attack.
//
// The package has no code outside its tests; docs/abuse.md lists the
// attacks, their bounds, the measured figures and the commands.
package abuse
