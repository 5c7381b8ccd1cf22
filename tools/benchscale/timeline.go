package benchscale

import (
	"sync"
	"time"
)

// marks are the moments of one workload's dispatch, as the harness saw
// them.
type marks struct {
	// reserved is when the driver's status update that reserved quota on
	// the manager returned.
	reserved time.Time
	// firstCopy is when a worker's watch first saw Courier's copy.
	firstCopy time.Time
	// admitted is when the first of the workers' admissions returned.
	admitted time.Time
	// ready is when the manager watch saw Courier's check Ready.
	ready time.Time
}

// timeline records the marks of every workload, by Workload name, and
// tells a phase when all of its workloads are Ready.
type timeline struct {
	mu      sync.Mutex
	byName  map[string]*marks
	current *phase
	readies int
}

// phase is a set of workloads the harness waits for.
type phase struct {
	pending map[string]bool
	total   int
	// halfway is closed when half of the workloads are Ready, done when
	// all are; last is when the last one was.
	halfway, done chan struct{}
	last          time.Time
}

func newTimeline() *timeline {
	return &timeline{byName: map[string]*marks{}}
}

func (t *timeline) get(name string) *marks {
	m := t.byName[name]
	if m == nil {
		m = &marks{}
		t.byName[name] = m
	}
	return m
}

// expect starts a phase over the named workloads, before any of them is
// submitted.
func (t *timeline) expect(names []string) *phase {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := &phase{pending: map[string]bool{}, total: len(names), halfway: make(chan struct{}), done: make(chan struct{})}
	for _, n := range names {
		p.pending[n] = true
	}
	if len(names) == 0 {
		close(p.halfway)
		close(p.done)
	}
	t.current = p
	return p
}

func (t *timeline) reserved(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.get(name).reserved = at
}

func (t *timeline) copySeen(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.get(name); m.firstCopy.IsZero() {
		m.firstCopy = at
	}
}

func (t *timeline) admitted(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.get(name); m.admitted.IsZero() {
		m.admitted = at
	}
}

// ready records the first time the check was seen Ready.
func (t *timeline) ready(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.get(name)
	if !m.ready.IsZero() {
		return
	}
	m.ready = at
	t.readies++
	p := t.current
	if p == nil || !p.pending[name] {
		return
	}
	delete(p.pending, name)
	p.last = at
	left := len(p.pending)
	if left == p.total/2 {
		close(p.halfway)
	}
	if left == 0 {
		close(p.done)
	}
}

// readyCount is how many workloads have been seen Ready in all.
func (t *timeline) readyCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.readies
}

// lastReady is when the phase's last workload was seen Ready.
func (t *timeline) lastReady(p *phase) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return p.last
}

// remaining is how many of the phase's workloads are not Ready yet.
func (t *timeline) remaining(p *phase) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(p.pending)
}

// marksOf returns a copy of the marks of the named workloads.
func (t *timeline) marksOf(names []string) []marks {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]marks, 0, len(names))
	for _, n := range names {
		out = append(out, *t.get(n))
	}
	return out
}
