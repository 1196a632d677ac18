package metrics

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Registry holds metric families and writes them in the text format. It is
// safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	families map[string]*family
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{families: map[string]*family{}}
}

// family is one metric name: its HELP and TYPE, its label names, and one
// value per label-value combination.
type family struct {
	name   string
	help   string
	typ    string // "counter" or "gauge"
	labels []string
	newVal func() value

	mu       sync.RWMutex
	children map[string]*child // key: label values joined by labelSep
}

type child struct {
	values []string
	val    value
}

// labelSep joins label values into a map key. It cannot occur in a value:
// values are valid UTF-8 once sanitized, and 0xff never is.
const labelSep = "\xff"

// NewCounter registers a counter without labels.
func (r *Registry) NewCounter(name, help string) (*Counter, error) {
	f, err := r.add(name, help, "counter", nil, func() value { return new(Counter) })
	if err != nil {
		return nil, err
	}
	v, _ := f.get(nil)
	return v.(*Counter), nil
}

// NewGauge registers a gauge without labels.
func (r *Registry) NewGauge(name, help string) (*Gauge, error) {
	f, err := r.add(name, help, "gauge", nil, func() value { return new(Gauge) })
	if err != nil {
		return nil, err
	}
	v, _ := f.get(nil)
	return v.(*Gauge), nil
}

// NewCounterVec registers a counter family partitioned by the given labels.
func (r *Registry) NewCounterVec(name, help string, labels ...string) (*CounterVec, error) {
	if len(labels) == 0 {
		return nil, fmt.Errorf("metrics: %s: a vector needs at least one label; use NewCounter", name)
	}
	f, err := r.add(name, help, "counter", labels, func() value { return new(Counter) })
	if err != nil {
		return nil, err
	}
	return &CounterVec{f: f}, nil
}

// NewGaugeVec registers a gauge family partitioned by the given labels.
func (r *Registry) NewGaugeVec(name, help string, labels ...string) (*GaugeVec, error) {
	if len(labels) == 0 {
		return nil, fmt.Errorf("metrics: %s: a vector needs at least one label; use NewGauge", name)
	}
	f, err := r.add(name, help, "gauge", labels, func() value { return new(Gauge) })
	if err != nil {
		return nil, err
	}
	return &GaugeVec{f: f}, nil
}

func (r *Registry) add(name, help, typ string, labels []string, newVal func() value) (*family, error) {
	if !validMetricName(name) {
		return nil, fmt.Errorf("metrics: invalid metric name %q", name)
	}
	for i, l := range labels {
		if !validLabelName(l) {
			return nil, fmt.Errorf("metrics: %s: invalid label name %q", name, l)
		}
		if slices.Contains(labels[:i], l) {
			return nil, fmt.Errorf("metrics: %s: duplicate label name %q", name, l)
		}
	}
	f := &family{
		name:     name,
		help:     help,
		typ:      typ,
		labels:   slices.Clone(labels),
		newVal:   newVal,
		children: map[string]*child{},
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.families[name]; dup {
		return nil, fmt.Errorf("metrics: %s registered twice", name)
	}
	r.families[name] = f
	return f, nil
}

// get returns the value for the given label values, creating it on first
// use.
func (f *family) get(values []string) (value, error) {
	if len(values) != len(f.labels) {
		return nil, fmt.Errorf("metrics: %s has %d labels, got %d values", f.name, len(f.labels), len(values))
	}
	// The key is built on the stack: a map lookup with string(bytes) does
	// not allocate, so the common case (series exists) is free of garbage.
	var arr [128]byte
	buf := arr[:0]
	for i, v := range values {
		if i > 0 {
			buf = append(buf, labelSep...)
		}
		buf = append(buf, v...)
	}
	f.mu.RLock()
	c := f.children[string(buf)]
	f.mu.RUnlock()
	if c != nil {
		return c.val, nil
	}
	// Invalid UTF-8 would not survive export unchanged, so sanitize before
	// keying: two spellings that export alike must share one series.
	clean := make([]string, len(values))
	for i, v := range values {
		clean[i] = strings.ToValidUTF8(v, "\uFFFD")
	}
	key := strings.Join(clean, labelSep)
	f.mu.Lock()
	defer f.mu.Unlock()
	if c = f.children[key]; c == nil {
		c = &child{values: clean, val: f.newVal()}
		f.children[key] = c
	}
	return c.val, nil
}

// CounterVec is a counter family with labels.
type CounterVec struct{ f *family }

// With returns the counter for the given label values, in the order the
// labels were registered. Keep the result when the values are fixed: the
// lookup costs a map access, the increment does not.
func (v *CounterVec) With(values ...string) (*Counter, error) {
	c, err := v.f.get(values)
	if err != nil {
		return nil, err
	}
	return c.(*Counter), nil
}

// GaugeVec is a gauge family with labels.
type GaugeVec struct{ f *family }

// With returns the gauge for the given label values, in registration order.
func (v *GaugeVec) With(values ...string) (*Gauge, error) {
	g, err := v.f.get(values)
	if err != nil {
		return nil, err
	}
	return g.(*Gauge), nil
}

// AppendText appends every family with at least one series in the text
// exposition format 0.0.4: families sorted by name, series by label values.
func (r *Registry) AppendText(b []byte) []byte {
	r.mu.RLock()
	fams := make([]*family, 0, len(r.families))
	for _, f := range r.families {
		fams = append(fams, f)
	}
	r.mu.RUnlock()
	slices.SortFunc(fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	for _, f := range fams {
		b = f.appendText(b)
	}
	return b
}

// WriteText writes the registry in the text exposition format 0.0.4.
func (r *Registry) WriteText(w io.Writer) error {
	_, err := w.Write(r.AppendText(nil))
	return err
}

func (f *family) appendText(b []byte) []byte {
	f.mu.RLock()
	kids := make([]*child, 0, len(f.children))
	for _, c := range f.children {
		kids = append(kids, c)
	}
	f.mu.RUnlock()
	if len(kids) == 0 {
		return b
	}
	slices.SortFunc(kids, func(a, b *child) int { return slices.Compare(a.values, b.values) })
	b = append(b, "# HELP "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = appendHelp(b, f.help)
	b = append(b, "\n# TYPE "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = append(b, f.typ...)
	b = append(b, '\n')
	for _, c := range kids {
		b = append(b, f.name...)
		if len(f.labels) > 0 {
			b = append(b, '{')
			for i, l := range f.labels {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, l...)
				b = append(b, '=', '"')
				b = appendLabelValue(b, c.values[i])
				b = append(b, '"')
			}
			b = append(b, '}')
		}
		b = append(b, ' ')
		b = c.val.appendValue(b)
		b = append(b, '\n')
	}
	return b
}

// ContentType is the media type of the text exposition format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler returns an http.Handler that serves the registry to GET and HEAD.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body := r.AppendText(nil)
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if req.Method == http.MethodHead {
			return
		}
		w.Write(body)
	})
}
