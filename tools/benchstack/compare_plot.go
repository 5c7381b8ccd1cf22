package benchstack

import (
	"fmt"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// cdf is the empirical distribution of sorted samples: the share of them
// at or below each one.
func cdf(sorted []float64) plotter.XYs {
	xys := make(plotter.XYs, len(sorted))
	for i, s := range sorted {
		xys[i] = plotter.XY{X: s, Y: float64(i+1) / float64(len(sorted))}
	}
	return xys
}

// cumulative is, at each of the sorted event times, the events so far: its
// slope is the throughput.
func cumulative(sorted []float64) plotter.XYs {
	xys := make(plotter.XYs, 0, len(sorted)+1)
	if len(sorted) > 0 {
		xys = append(xys, plotter.XY{X: 0, Y: 0})
	}
	for i, s := range sorted {
		xys = append(xys, plotter.XY{X: s, Y: float64(i + 1)})
	}
	return xys
}

// pooled gathers one system's samples of a load over its repeats, sorted,
// each at least a millisecond for the log scale.
func pooled(phases []PhaseResult, system string, of func(Samples) []float64) []float64 {
	var out []float64
	for _, p := range phases {
		if p.System == system {
			for _, s := range of(p.Samples) {
				out = append(out, max(s, 0.001))
			}
		}
	}
	slices.Sort(out)
	return out
}

// plotLoad draws, for one load, each system's distribution of the time
// from submission to check Ready and to complete, the repeats pooled, and
// each repeat's completions over time, into dir; it returns the files'
// paths.
func plotLoad(dir, stamp string, load Load, all []PhaseResult) ([]string, error) {
	var phases []PhaseResult
	for _, p := range all {
		if p.Load == load.Name {
			phases = append(phases, p)
		}
	}
	if len(phases) == 0 {
		return nil, nil
	}
	latency := plot.New()
	latency.Title.Text = fmt.Sprintf("%s: submission → check Ready (solid) and → complete (dashed), repeats pooled (%d %s %s)",
		load.Name, load.Jobs, load.kind(), describeRate(load.Rate))
	latency.X.Label.Text = "seconds"
	latency.Y.Label.Text = "share of jobs"
	latency.X.Scale = plot.LogScale{}
	latency.X.Tick.Marker = plot.LogTicks{Prec: -1}
	latency.Legend.Top, latency.Legend.Left = true, true
	throughput := plot.New()
	throughput.Title.Text = fmt.Sprintf("%s: jobs complete over time, each repeat (the slope is the throughput)", load.Name)
	throughput.X.Label.Text = "seconds from the first submission"
	throughput.Y.Label.Text = "jobs complete"
	throughput.Legend.Top, throughput.Legend.Left = false, false
	line := func(xys plotter.XYs, color int, dashed bool) (*plotter.Line, error) {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(color)
		l.Width = vg.Points(1.5)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		return l, nil
	}
	// A plot with no line is not drawn: with no sample the log scale has
	// no range, and the plotter panics.
	drawn := map[string]int{}
	for i, name := range SystemOrder {
		label := Systems[name].Label
		for _, of := range []struct {
			samples func(Samples) []float64
			dashed  bool
			what    string
		}{
			{func(s Samples) []float64 { return s.SubmitToReady }, false, "→ Ready"},
			{func(s Samples) []float64 { return s.SubmitToComplete }, true, "→ complete"},
		} {
			samples := pooled(phases, name, of.samples)
			if len(samples) == 0 {
				continue
			}
			l, err := line(cdf(samples), i, of.dashed)
			if err != nil {
				return nil, fmt.Errorf("drawing the latency of %s: %w", name, err)
			}
			latency.Add(l)
			latency.Legend.Add(label+" "+of.what, l)
			drawn["latency-cdf"]++
		}
		first := true
		for _, p := range phases {
			if p.System != name || len(p.Samples.CompleteAt) == 0 {
				continue
			}
			l, err := line(cumulative(p.Samples.CompleteAt), i, false)
			if err != nil {
				return nil, fmt.Errorf("drawing the throughput of %s: %w", name, err)
			}
			throughput.Add(l)
			drawn["throughput"]++
			if first {
				throughput.Legend.Add(label, l)
				first = false
			}
		}
	}
	var paths []string
	for name, p := range map[string]*plot.Plot{"latency-cdf": latency, "throughput": throughput} {
		if drawn[name] == 0 {
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.png", stamp, load.Name, name))
		if err := p.Save(10*vg.Inch, 5.5*vg.Inch, path); err != nil {
			return nil, fmt.Errorf("drawing %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	slices.Sort(paths)
	return paths, nil
}
