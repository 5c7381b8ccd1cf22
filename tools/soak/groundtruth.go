package soak

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The soak judges what ran where from the pods alone, as its own watches of
// each worker's API server saw them (PodRun), never from what Courier says
// in its status fields: a job ran on a worker while one of its pods there
// was Running.

// Span is a time a job's pods ran on one worker: the union of its pods'
// Running intervals there.
type Span struct {
	Worker string    `json:"worker"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
}

// podSpan is when one pod ran; one never seen to stop runs until end.
func podSpan(p *PodRun, end time.Time) (Span, bool) {
	if p.Running.IsZero() {
		return Span{}, false
	}
	s := Span{Worker: p.Worker, Start: p.Running, End: end}
	if !p.Ended.IsZero() {
		s.End = p.Ended
	}
	if s.End.Before(s.Start) {
		s.End = s.Start
	}
	return s, true
}

// ranOn returns when a job's pods ran, per worker, the spans of each
// worker merged, in order of start.
func ranOn(j Job, end time.Time) []Span {
	var spans []Span
	for _, p := range j.Pods {
		if s, ok := podSpan(p, end); ok {
			spans = append(spans, s)
		}
	}
	slices.SortFunc(spans, func(a, b Span) int {
		if c := strings.Compare(a.Worker, b.Worker); c != 0 {
			return c
		}
		return a.Start.Compare(b.Start)
	})
	var out []Span
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1].Worker == s.Worker && !s.Start.After(out[n-1].End) {
			if s.End.After(out[n-1].End) {
				out[n-1].End = s.End
			}
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Span) int { return a.Start.Compare(b.Start) })
	return out
}

// Overlap is a job whose pods ran on two workers at the same moment.
type Overlap struct {
	Job string `json:"job"`
	// Workers are those that ran it at once.
	Workers []string `json:"workers"`
	// For is how long, in all, two or more workers ran it at once, from
	// From to To.
	For  time.Duration `json:"for"`
	From time.Time     `json:"from"`
	To   time.Time     `json:"to"`
	// Pods are the job's pods that ran, where and when.
	Pods []string `json:"pods"`
	// Unpromised, when set, says why the overlap is outside what the
	// lost-worker policy promises; it then neither passes nor fails.
	Unpromised string `json:"unpromised,omitempty"`
}

// overlapOf returns when a job's pods ran on two or more workers at once;
// nil if they never did. A pod that stops at the moment another starts
// does not overlap it.
func overlapOf(j Job, end time.Time) *Overlap {
	type event struct {
		at     time.Time
		worker string
		delta  int
	}
	var events []event
	var pods []string
	for _, p := range j.Pods {
		s, ok := podSpan(p, end)
		if !ok {
			continue
		}
		events = append(events, event{s.Start, s.Worker, 1}, event{s.End, s.Worker, -1})
		pods = append(pods, fmt.Sprintf("%s pod %s ran %s–%s", p.Worker, p.Pod, clock(s.Start), stopClock(p, s.End)))
	}
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // Stops first.
	})
	active := map[string]int{}
	at2 := map[string]bool{}
	var o Overlap
	var prev time.Time
	for _, e := range events {
		if running := runningOn(active); len(running) >= 2 && e.at.After(prev) {
			if o.For == 0 {
				o.From = prev
			}
			o.For += e.at.Sub(prev)
			o.To = e.at
			for _, w := range running {
				at2[w] = true
			}
		}
		active[e.worker] += e.delta
		prev = e.at
	}
	if o.For == 0 {
		return nil
	}
	o.Job, o.Workers, o.Pods = j.Name, slices.Sorted(maps.Keys(at2)), pods
	return &o
}

// runningOn lists the workers with a pod running.
func runningOn(active map[string]int) []string {
	var out []string
	for w, n := range active {
		if n > 0 {
			out = append(out, w)
		}
	}
	return out
}

// stopClock is when a pod stopped, or that it did not.
func stopClock(p *PodRun, end time.Time) string {
	if p.Ended.IsZero() {
		return "(still running at " + clock(end) + ")"
	}
	return clock(end) + " " + p.Outcome
}

// checkOverlaps returns the jobs whose pods ran on two workers at the same
// moment, longest first, in full, and as lines of two kinds: those Courier
// does not promise to prevent (unpromisedBy: under Fenced, a worker that
// ran the job had its own API server down longer than workerLostTimeout
// meanwhile), and the offenders, every other one.
func checkOverlaps(jobs []Job, end time.Time, faults []*Fault, policy string, lostTimeout time.Duration) (offenders, unpromised []string, overlaps []Overlap) {
	for _, j := range jobs {
		if o := overlapOf(j, end); o != nil {
			o.Unpromised = unpromisedBy(*o, faults, policy, lostTimeout)
			overlaps = append(overlaps, *o)
		}
	}
	slices.SortStableFunc(overlaps, func(a, b Overlap) int { return int(b.For - a.For) })
	for _, o := range overlaps {
		line := fmt.Sprintf("%s: pods ran on %s at once for %s (%s–%s): %s", o.Job,
			strings.Join(o.Workers, " and "), o.For.Round(time.Millisecond), clock(o.From), clock(o.To), strings.Join(o.Pods, "; "))
		if o.Unpromised != "" {
			unpromised = append(unpromised, line+"; "+o.Unpromised)
			continue
		}
		offenders = append(offenders, line)
	}
	return offenders, unpromised, overlaps
}

// overlapSummary says how many jobs ran on two workers at once, and for
// how long, and how many of them the lost-worker policy does not promise
// to prevent.
func overlapSummary(overlaps []Overlap) string {
	if len(overlaps) == 0 {
		return "no job's pods ran on two workers at the same moment"
	}
	var total time.Duration
	unpromised := 0
	for _, o := range overlaps {
		total += o.For
		if o.Unpromised != "" {
			unpromised++
		}
	}
	out := fmt.Sprintf("%d jobs' pods ran on two workers at the same moment: %s at most, %s in all",
		len(overlaps), overlaps[0].For.Round(time.Millisecond), total.Round(time.Millisecond))
	if unpromised > 0 {
		out += fmt.Sprintf("; %d of them outside what Courier promises (each says why)", unpromised)
	}
	return out
}

// checkRanAgain returns the jobs a pod of which started after another of
// theirs had succeeded: a job that had run to its end ran again. The soak's
// jobs have one pod each; no check fails on it, as a worker lost under the
// Timeout policy may end a job Courier cannot see end, but the report
// lists them.
func checkRanAgain(jobs []Job) []string {
	var out []string
	for _, j := range jobs {
		var done *PodRun
		for _, p := range j.Pods {
			if p.Outcome == "Succeeded" && !p.Ended.IsZero() && (done == nil || p.Ended.Before(done.Ended)) {
				done = p
			}
		}
		if done == nil {
			continue
		}
		for _, p := range j.Pods {
			if p != done && !p.Running.IsZero() && !p.Running.Before(done.Ended) {
				out = append(out, fmt.Sprintf("%s: pod %s succeeded on %s at %s, pod %s started on %s at %s",
					j.Name, done.Pod, done.Worker, clock(done.Ended), p.Pod, p.Worker, clock(p.Running)))
				break
			}
		}
	}
	return out
}

// undisturbedKinds are the faults after which no job that ran when they
// began may be restarted or moved: Courier's own faults.
var undisturbedKinds = map[Kind]bool{CutOffAll: true, RestartAfterDown: true}

// checkUndisturbed returns, for each cut-off-all and restart-after-down
// fault, the jobs running when it began (on every worker, or on its
// worker) that it restarted or moved, and a note counting them. A job is
// restarted when one of the pods it ran then stopped while the fault
// lasted, however (deleted, failed, or succeeded), and another of its pods
// started after: it ran again from the start; moved when one of its pods
// started on another worker while the fault lasted, or after such a stop.
// Jobs another fault hit on purpose (a copy deleted, evicted, deactivated)
// before this one ended are left out.
func checkUndisturbed(jobs []Job, faults []*Fault) (offenders, notes []string) {
	for _, f := range faults {
		if !undisturbedKinds[f.Kind] || f.Started.IsZero() {
			continue
		}
		hit := map[string]bool{}
		for _, g := range faults {
			if !g.Started.IsZero() && g.Started.Before(f.Restored) {
				for _, name := range g.Hit {
					hit[name] = true
				}
			}
		}
		var running, restarted, moved int
		byWorker := map[string]int{}
		for _, j := range jobs {
			if hit[j.Name] {
				continue
			}
			what := disturbance(j, f)
			if what == nil {
				continue
			}
			running++
			for _, w := range what.on {
				byWorker[w]++
			}
			if what.restarted {
				restarted++
			}
			if what.moved {
				moved++
			}
			if what.restarted || what.moved {
				offenders = append(offenders, fmt.Sprintf("%s on %s at %s: %s %s", f.Kind, f.Target, clock(f.Started), j.Name, what.how))
			}
		}
		note := fmt.Sprintf("%s on %s %s–%s: %d jobs ran when it began; %d restarted, %d moved",
			f.Kind, f.Target, clock(f.Started), clock(f.Restored), running, restarted, moved)
		if len(byWorker) > 0 {
			var per []string
			for _, w := range slices.Sorted(maps.Keys(byWorker)) {
				per = append(per, fmt.Sprintf("%s %d", w, byWorker[w]))
			}
			note += "; running then, by worker: " + strings.Join(per, ", ")
		}
		notes = append(notes, note)
	}
	return offenders, notes
}

// disturbed is what a fault did to a job that ran when it began.
type disturbed struct {
	restarted, moved bool
	how              string
	// on are the workers it ran on when the fault began.
	on []string
}

// disturbance returns what fault f did to job j; nil if j did not run, on
// f's workers, when f began.
func disturbance(j Job, f *Fault) *disturbed {
	ranOn := map[string]bool{}
	var ran []*PodRun
	for _, p := range j.Pods {
		if p.Running.IsZero() || p.Running.After(f.Started) || (!p.Ended.IsZero() && !p.Ended.After(f.Started)) {
			continue
		}
		if f.Kind == RestartAfterDown && p.Worker != f.Target {
			continue
		}
		ranOn[p.Worker] = true
		ran = append(ran, p)
	}
	if len(ran) == 0 {
		return nil
	}
	within := func(t time.Time) bool { return !t.Before(f.Started) && !t.After(f.Restored) }
	var stopped *PodRun
	for _, p := range ran {
		if within(p.Ended) && (stopped == nil || p.Ended.Before(stopped.Ended)) {
			stopped = p
		}
	}
	d := &disturbed{on: slices.Sorted(maps.Keys(ranOn))}
	var how []string
	for _, p := range j.Pods {
		if p.Running.IsZero() || slices.Contains(ran, p) {
			continue
		}
		again := stopped != nil && !p.Running.Before(stopped.Ended)
		if again && !d.restarted {
			d.restarted = true
			how = append(how, fmt.Sprintf("restarted: pod %s on %s stopped (%s) at %s, pod %s started on %s at %s",
				stopped.Pod, stopped.Worker, stopped.Outcome, clock(stopped.Ended), p.Pod, p.Worker, clock(p.Running)))
		}
		if !ranOn[p.Worker] && (again || within(p.Running)) && !d.moved {
			d.moved = true
			how = append(how, fmt.Sprintf("moved: pod %s started on %s at %s", p.Pod, p.Worker, clock(p.Running)))
		}
	}
	d.how = strings.Join(how, "; ")
	return d
}
