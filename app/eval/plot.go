package eval

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot size: 8 x 5 inches, 768 x 480 pixels in the PNGs.
const (
	plotW = 8 * vg.Inch
	plotH = 5 * vg.Inch
)

// plots writes every figure with data as PNG and SVG.
func (r *Results) plots(dir string) error {
	figs := map[string]func() (*plot.Plot, error){}
	if len(r.Outcomes) > 0 {
		figs["fig9_max_rate"] = r.plotMaxRate
		figs["fig10_setup_latency"] = r.plotSetup
		figs["fig12_cpu"] = r.plotCPU
	}
	if len(r.Transfers) > 0 {
		figs["fig11_transfer"] = r.plotTransfer
	}
	if len(r.FailOpen) > 0 {
		figs["fig13_failopen"] = r.plotFailOpen
	}
	var errs []error
	for name, mk := range figs {
		p, err := mk()
		if err != nil {
			errs = append(errs, fmt.Errorf("eval: %s: %w", name, err))
			continue
		}
		for _, ext := range []string{".png", ".svg"} {
			if err := p.Save(plotW, plotH, filepath.Join(dir, name+ext)); err != nil {
				errs = append(errs, fmt.Errorf("eval: saving %s%s: %w", name, ext, err))
			}
		}
	}
	return errors.Join(errs...)
}

// newPlot is a plot with the common style: title, axis labels, legend at
// the top left.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	return p
}

// logAxis makes a an axis in log scale with decade and 2/5 labels.
func logAxis(a *plot.Axis) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = logTicks{}
}

// logTicks labels 1, 2 and 5 of every decade.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 {
		return nil
	}
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1; m < 10; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < lo*0.999 || v > hi*1.001 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = trimFloat(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

func trimFloat(v float64) string {
	switch {
	case v >= 1e6 && math.Mod(v, 1e6) == 0:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3 && math.Mod(v, 1e3) == 0:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

// dashed is added to a series index for the dashed twin of series i:
// same color, other glyph.
const dashed = 100

// style gives series i a color and a glyph, and i+dashed the same color
// with another glyph and a dash pattern.
func style(i int) (color.Color, draw.GlyphDrawer, []vg.Length) {
	var dash []vg.Length
	g := i
	if i >= dashed {
		dash = []vg.Length{vg.Points(5), vg.Points(3)}
		i -= dashed
		g = i + 3
	}
	return plotutil.Color(i), plotutil.Shape(g), dash
}

// headroom raises the y axis so that the legend at the top has room above
// the data: by factor on a linear axis, by that many decades... on a log one.
func headroom(p *plot.Plot, factor float64) {
	if _, isLog := p.Y.Scale.(plot.LogScale); isLog {
		p.Y.Max *= math.Pow(10, factor)
		return
	}
	p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)*factor
}

// addSeries adds a line with points named name.
func addSeries(p *plot.Plot, i int, name string, xys plotter.XYs) error {
	if len(xys) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	c, g, dash := style(i)
	l.Color, l.Dashes, l.Width = c, dash, vg.Points(1.5)
	s.Color, s.Shape, s.Radius = c, g, vg.Points(3)
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

// variantIndex keeps a variant's color the same in every figure.
func variantIndex(v Variant) int {
	all := []Variant{QuicGo, HostAlways, HostAuto, XDP, Split, XDP2Q, Split2Q}
	if i := slices.Index(all, v); i >= 0 {
		return i
	}
	return len(all)
}

// plotMaxRate is figure 9: the median maximum sustained attack rate.
func (r *Results) plotMaxRate() (*plot.Plot, error) {
	sums := r.Summaries()
	p := newPlot(fmt.Sprintf("Max. sustained attack rate, median of %d run(s) (≥: never failed)", r.Config.Runs),
		"variant", "attack rate (kpps)")
	vals := make(plotter.Values, len(sums))
	names := make([]string, len(sums))
	for i, s := range sums {
		vals[i] = s.MaxKpps
		l := fmt.Sprintf("%.0f", s.MaxKpps)
		if s.NeverFailed > 0 {
			l = "≥" + l
		}
		names[i] = fmt.Sprintf("%s\n%s kpps", s.Variant.Short(), l)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(40))
	if err != nil {
		return nil, err
	}
	bars.Color = plotutil.Color(1)
	bars.LineStyle.Width = vg.Points(0.5)
	p.Add(bars)
	p.Legend.Add("median max. sustained rate", bars)
	var fails plotter.XYs
	for i, s := range sums {
		if s.FailedKpps > 0 {
			fails = append(fails, plotter.XY{X: float64(i), Y: s.FailedKpps})
		}
	}
	if len(fails) > 0 {
		sc, err := plotter.NewScatter(fails)
		if err != nil {
			return nil, err
		}
		sc.Shape, sc.Color, sc.Radius = draw.PyramidGlyph{}, color.RGBA{R: 200, A: 255}, vg.Points(5)
		p.Add(sc)
		p.Legend.Add("median lowest failing rate", sc)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Font.Size = vg.Points(8)
	p.Y.Tick.Marker = plot.TickerFunc(linearTicks)
	p.X.Label.Text = ""
	p.Y.Min = 0
	top := 0.0
	for i, v := range vals {
		top = max(top, v, sums[i].FailedKpps)
	}
	p.Y.Max = top * 1.35
	p.Legend.Left = true
	return p, nil
}

// plotSetup is figure 10: median benign setup latency against attack rate.
func (r *Results) plotSetup() (*plot.Plot, error) {
	p := newPlot("Benign connection setup latency under attack (median of the requests)",
		"attack rate sent (kpps, log)", "setup latency (ms, log)")
	logAxis(&p.X)
	logAxis(&p.Y)
	pts := r.Ladder()
	var failed plotter.XYs
	for _, v := range r.variants() {
		var xys plotter.XYs
		for _, q := range pts {
			if q.Variant != v || q.Target == 0 || q.SentPPS <= 0 || math.IsNaN(q.SetupP50) || q.SetupP50 <= 0 {
				continue
			}
			xys = append(xys, plotter.XY{X: q.SentPPS / 1e3, Y: q.SetupP50})
			if q.Sustained < q.Runs {
				failed = append(failed, xys[len(xys)-1])
			}
		}
		sortXY(xys)
		if err := addSeries(p, variantIndex(v), v.Label(), xys); err != nil {
			return nil, err
		}
	}
	if len(failed) > 0 {
		s, err := plotter.NewScatter(failed)
		if err != nil {
			return nil, err
		}
		s.Shape, s.Radius, s.Color = draw.RingGlyph{}, vg.Points(6), color.Black
		p.Add(s)
		p.Legend.Add("step failed (benign loss or flood loss)", s)
	}
	headroom(p, 1.2)
	return p, nil
}

// plotCPU is figure 12: the defender's CPU against attack rate.
func (r *Results) plotCPU() (*plot.Plot, error) {
	p := newPlot("Defender CPU under attack (host: server process + its NAPI thread)",
		"attack rate sent (kpps, log)", "CPU (cores)")
	logAxis(&p.X)
	p.Y.Min = 0
	pts := r.Ladder()
	for _, v := range r.variants() {
		var total, host plotter.XYs
		for _, q := range pts {
			if q.Variant != v || q.Target == 0 || q.SentPPS <= 0 {
				continue
			}
			total = append(total, plotter.XY{X: q.SentPPS / 1e3, Y: q.HostCores + q.AgentCores})
			host = append(host, plotter.XY{X: q.SentPPS / 1e3, Y: q.HostCores})
		}
		sortXY(total)
		sortXY(host)
		name := v.Label()
		if v.Split() {
			name += ": agent + host"
		}
		if err := addSeries(p, variantIndex(v), name, total); err != nil {
			return nil, err
		}
		if v.Split() {
			if err := addSeries(p, dashed+variantIndex(v), v.Label()+": host only", host); err != nil {
				return nil, err
			}
		}
	}
	p.Y.Max = max(p.Y.Max, 1)
	headroom(p, 1.4)
	return p, nil
}

// plotTransfer is figure 11: mean transfer latency by file size.
func (r *Results) plotTransfer() (*plot.Plot, error) {
	p := newPlot("Transfer latency by file size under attack (mean of requests)",
		"file size (KB, log)", "transfer latency T1 - T2 (ms, log)")
	logAxis(&p.X)
	logAxis(&p.Y)
	pts := r.TransferPoints()
	for i, rate := range r.Config.TransferRates {
		for _, v := range []Variant{HostAlways, XDP} {
			var xys plotter.XYs
			for _, q := range pts {
				if q.Variant == v && q.Rate == rate && q.TransferMean > 0 && !math.IsNaN(q.TransferMean) {
					xys = append(xys, plotter.XY{X: float64(q.Size) / 1024, Y: q.TransferMean})
				}
			}
			sortXY(xys)
			name := fmt.Sprintf("%s, attack %.0f kpps", v.Label(), rate/1e3)
			// The color says the attack rate, the line the variant: solid
			// for the host's Retry, dashed for the agent.
			idx := i
			if v == XDP {
				idx += dashed
			}
			if err := addSeries(p, idx, name, xys); err != nil {
				return nil, err
			}
		}
	}
	headroom(p, 1.0)
	return p, nil
}

// plotFailOpen is figure 13: setup latency of each request by the time it
// started, the agent killed part way.
func (r *Results) plotFailOpen() (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("Fail-open: (d) split agent SIGKILLed at %.1f s (%.0f requests/s)", r.KillAt.Seconds(), r.Config.FailOpenRate),
		"time (s)", "setup latency (ms, log)")
	logAxis(&p.Y)
	p.X.Tick.Marker = plot.TickerFunc(linearTicks)
	var ok, failed plotter.XYs
	top := 0.0
	for _, t := range r.FailOpen {
		if t.Err == "" {
			ok = append(ok, plotter.XY{X: t.At.Seconds(), Y: ms(t.Setup)})
			top = max(top, ms(t.Setup))
		}
	}
	top = max(top*2, 1)
	for _, t := range r.FailOpen {
		if t.Err != "" {
			failed = append(failed, plotter.XY{X: t.At.Seconds(), Y: top})
		}
	}
	if err := addSeries(p, variantIndex(Split), "request (completed)", ok); err != nil {
		return nil, err
	}
	if len(failed) > 0 {
		s, err := plotter.NewScatter(failed)
		if err != nil {
			return nil, err
		}
		s.Shape, s.Color, s.Radius = draw.CrossGlyph{}, color.RGBA{R: 200, A: 255}, vg.Points(4)
		p.Add(s)
		p.Legend.Add("request failed (shown at the top)", s)
	}
	low := top
	for _, q := range ok {
		low = min(low, q.Y)
	}
	kill, err := plotter.NewLine(plotter.XYs{{X: r.KillAt.Seconds(), Y: low / 2}, {X: r.KillAt.Seconds(), Y: top}})
	if err != nil {
		return nil, err
	}
	kill.Color, kill.Dashes = color.Gray{Y: 90}, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(kill)
	p.Legend.Add("agent SIGKILLed", kill)
	headroom(p, 0.6)
	return p, nil
}

func sortXY(xys plotter.XYs) {
	slices.SortFunc(xys, func(a, b plotter.XY) int {
		switch {
		case a.X < b.X:
			return -1
		case a.X > b.X:
			return 1
		}
		return 0
	})
}

// linearTicks labels about five round values between lo and hi.
func linearTicks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return nil
	}
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= 6 {
			step *= m
			break
		}
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: trimFloat(math.Round(v))})
	}
	return ts
}
