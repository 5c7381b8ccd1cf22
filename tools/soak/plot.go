package soak

import (
	"fmt"
	"image/color"
	"maps"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The timeline's colours: a job waiting on the manager, its copy queued on
// a worker, its copy running (one colour per worker), and the faults.
var (
	waitingColor = color.RGBA{R: 200, G: 200, B: 200, A: 255}
	queuedColor  = color.RGBA{R: 240, G: 200, B: 80, A: 255}
	workerColors = []color.Color{
		color.RGBA{R: 31, G: 119, B: 180, A: 255},
		color.RGBA{R: 44, G: 160, B: 44, A: 255},
		color.RGBA{R: 148, G: 103, B: 189, A: 255},
		color.RGBA{R: 140, G: 86, B: 75, A: 255},
	}
	faultColor = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	// Not premultiplied: a light shade over the jobs' bars.
	faultBand = color.NRGBA{R: 214, G: 39, B: 40, A: 40}
)

// bar is one span of the timeline: x in seconds from the soak's start, y a
// row.
type bar struct {
	x0, x1, y float64
	color     color.Color
}

// timeline draws the jobs' spans, one row per job, under one lane per
// fault kind, with every fault shaded across the jobs too.
type timeline struct {
	bars, bands []bar
	rows        float64
}

func (t *timeline) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	rect := func(x0, x1, y0, y1 vg.Length, clr color.Color) {
		if x1-x0 < 0.5 {
			x1 = x0 + 0.5
		}
		c.FillPolygon(clr, c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
	}
	for _, b := range t.bands {
		rect(trX(b.x0), trX(b.x1), trY(-0.5), trY(t.rows-0.5), b.color)
	}
	for _, b := range t.bars {
		rect(trX(b.x0), trX(b.x1), trY(b.y-0.4), trY(b.y+0.4), b.color)
	}
}

func (t *timeline) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = 0, 1
	for _, b := range append(slices.Clone(t.bars), t.bands...) {
		xmax = max(xmax, b.x1)
	}
	return xmin, xmax, -1, t.rows + float64(len(Kinds)) + 1
}

// plotTimeline draws the report's jobs and faults into a PNG.
func plotTimeline(r *Report, path string) error {
	var t0 time.Time
	for _, j := range r.Jobs {
		if !j.Submitted.IsZero() && (t0.IsZero() || j.Submitted.Before(t0)) {
			t0 = j.Submitted
		}
	}
	sec := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	end := sec(r.Ended)
	or := func(t time.Time, def float64) float64 {
		if t.IsZero() {
			return def
		}
		return sec(t)
	}
	tl := &timeline{rows: float64(len(r.Jobs))}
	workerIndex := map[string]int{}
	for i, j := range r.Jobs {
		y := float64(i)
		if j.Submitted.IsZero() {
			continue
		}
		firstCopy := or(j.Finished, end)
		for _, c := range j.Copies {
			firstCopy = min(firstCopy, sec(c.Created))
		}
		tl.bars = append(tl.bars, bar{sec(j.Submitted), firstCopy, y, waitingColor})
		for _, c := range j.Copies {
			if _, ok := workerIndex[c.Worker]; !ok {
				workerIndex[c.Worker] = len(workerIndex)
			}
			gone := min(or(c.Deleted, end), or(c.Ended, end))
			started := or(c.Started, gone)
			tl.bars = append(tl.bars, bar{sec(c.Created), started, y, queuedColor},
				bar{started, gone, y, workerColors[workerIndex[c.Worker]%len(workerColors)]})
		}
	}
	lanes := map[Kind]float64{}
	for i, k := range Kinds {
		lanes[k] = tl.rows + 1 + float64(i)
	}
	for _, f := range r.Faults {
		if f.Started.IsZero() {
			continue
		}
		x0, x1 := sec(f.Started), max(sec(f.Restored), sec(f.Started)+1)
		tl.bars = append(tl.bars, bar{x0, x1, lanes[f.Kind], faultColor})
		tl.bands = append(tl.bands, bar{x0, x1, 0, faultBand})
	}

	p := plot.New()
	p.Title.Text = fmt.Sprintf("Courier soak %s: %d jobs, %d faults (seed %d)", r.Run, len(r.Jobs), len(r.Faults), r.Options.Seed)
	p.X.Label.Text = "seconds from the first submission"
	p.Y.Label.Text = "jobs, in submission order; faults above"
	p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		ticks := []plot.Tick{{Value: 0, Label: "0"}, {Value: tl.rows - 1, Label: fmt.Sprint(len(r.Jobs) - 1)}}
		for _, k := range Kinds {
			ticks = append(ticks, plot.Tick{Value: lanes[k], Label: string(k)})
		}
		return ticks
	})
	p.Add(tl)
	p.Legend.Top = false
	p.Legend.Add("waiting on the manager", swatch{waitingColor})
	p.Legend.Add("queued on a worker", swatch{queuedColor})
	for _, w := range slices.Sorted(maps.Keys(workerIndex)) {
		p.Legend.Add("running on "+w, swatch{workerColors[workerIndex[w]%len(workerColors)]})
	}
	p.Legend.Add("fault", swatch{faultColor})
	if err := p.Save(16*vg.Inch, 10*vg.Inch, path); err != nil {
		return fmt.Errorf("drawing the timeline: %w", err)
	}
	return nil
}

// swatch is a legend thumbnail of one colour.
type swatch struct{ color color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.color, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}
