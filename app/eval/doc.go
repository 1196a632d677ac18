// Package eval reproduces the TurboRetry paper's evaluation (figures 9 to
// 13, tables 3 and 4) on one Linux machine: each defence variant runs in
// network namespaces of its own, pinned to its CPUs, flooded by the
// live-frames generator (offload/flood/live) while a benign HTTP/3 client
// opens a steady stream of fresh connections with a deadline each. Run
// (root) writes CSV files and PNG/SVG plots; `turboretry eval` is its
// command line and docs/evaluation.md the results and what differs from
// the paper's testbed.
package eval
