package benchstack

import (
	"fmt"
	"path/filepath"

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

// plotLoad draws, for one load, the latency CDF of each system and each
// system's throughput over time, into dir; it returns the files' paths.
func plotLoad(dir, stamp string, phases []PhaseResult) ([]string, error) {
	if len(phases) == 0 {
		return nil, nil
	}
	load := phases[0].Load
	latency := plot.New()
	latency.Title.Text = fmt.Sprintf("%s: quota reserved → check Ready (%d %s %s)", load, phases[0].Jobs, phases[0].Kind, describeRate(phases[0].Rate))
	latency.X.Label.Text = "seconds"
	latency.Y.Label.Text = "share of workloads"
	latency.X.Scale = plot.LogScale{}
	latency.X.Tick.Marker = plot.LogTicks{Prec: -1}
	latency.Legend.Top, latency.Legend.Left = true, true
	throughput := plot.New()
	throughput.Title.Text = fmt.Sprintf("%s: workloads whose check turned Ready, over time (the slope is the throughput)", load)
	throughput.X.Label.Text = "seconds from the first quota reserved"
	throughput.Y.Label.Text = "workloads"
	throughput.Legend.Top, throughput.Legend.Left = false, false
	for i, p := range phases {
		// Log scale: latencies of zero are drawn at a millisecond.
		samples := make([]float64, len(p.Samples.QuotaToReady))
		for k, s := range p.Samples.QuotaToReady {
			samples[k] = max(s, 0.001)
		}
		if len(samples) > 0 {
			l, err := plotter.NewLine(cdf(samples))
			if err != nil {
				return nil, fmt.Errorf("drawing the latency of %s: %w", p.System, err)
			}
			l.Color = plotutil.Color(i)
			l.Width = vg.Points(1.5)
			latency.Add(l)
			latency.Legend.Add(p.SystemLabel, l)
		}
		if xys := cumulative(p.Samples.ReadyAt); len(xys) > 0 {
			l, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("drawing the throughput of %s: %w", p.System, err)
			}
			l.Color = plotutil.Color(i)
			l.Width = vg.Points(1.5)
			throughput.Add(l)
			throughput.Legend.Add(fmt.Sprintf("%s (%.2f/s overall)", p.SystemLabel, p.Throughput), l)
		}
	}
	var paths []string
	for name, p := range map[string]*plot.Plot{"latency-cdf": latency, "throughput": throughput} {
		path := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.png", stamp, load, name))
		if err := p.Save(9*vg.Inch, 5*vg.Inch, path); err != nil {
			return nil, fmt.Errorf("drawing %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
