// Package benchmark holds the end-to-end offload benchmarks of
// docs/offload.md ("Measurements"): the maximum attack rate each server
// variant survives without losing a benign request, the CPU each spends
// per attack packet at one fixed flood rate, and the benign connection
// setup latency with and without the Retry agent.
//
// Everything lives in the package's _test.go files; they need root
// (network namespaces, XDP, AF_XDP) and skip otherwise. Run them with
//
//	go test -run='^$' -bench=. -benchtime=1x ./integrationtests/benchmark/
package benchmark
