// Package metrics is a small Prometheus registry: counters and gauges, with
// or without labels, exported in the text exposition format 0.0.4.
//
// It exists so the server can publish a handful of metrics without pulling
// in client_golang. Increments are single atomic operations; the registry
// lock is taken only when a metric or a new label combination is created and
// when the registry is scraped.
package metrics
