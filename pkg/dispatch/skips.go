package dispatch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// How long a worker is passed over for a Workload after a create there
// failed for a reason a person must fix.
const (
	foreignSkip   = 5 * time.Minute
	namespaceSkip = 30 * time.Second
	// refusedSkip: a worker's admission or validation refused a create;
	// the same create would be refused again until someone changes it.
	refusedSkip = time.Minute
	// failedSkip: a worker failed a create with a server error of its own
	// (its Kueue's webhook unreachable, say); it may be back in a moment.
	failedSkip = 30 * time.Second

	// requeueSoon is when to look again after passing a worker over.
	requeueSoon = time.Second
)

// skipNotes remembers, per manager Workload, workers to pass over for a
// while: one holding a same-name object Courier does not own, or lacking the
// namespace. Kept in memory: after a restart the next create finds out again.
//
// A worker that fails a create with a server error of its own is also
// noted for the namespace, so that the namespace's other jobs pass it over
// without trying: BestFit ranks a worker whose Kueue is down first, for
// it runs nothing, and each new job would otherwise fail a create there
// before it went elsewhere (docs/soak.md, finding 26). A namespace, not
// the whole worker: a webhook may fail for some namespaces only.
type skipNotes struct {
	mu      sync.Mutex
	notes   map[types.UID]map[string]skipNote
	failing map[failingKey]skipNote
}

type failingKey struct{ cluster, namespace string }

type skipNote struct {
	reason string
	until  time.Time
}

func newSkipNotes() *skipNotes {
	return &skipNotes{notes: map[types.UID]map[string]skipNote{}, failing: map[failingKey]skipNote{}}
}

func (s *skipNotes) add(uid types.UID, cluster, reason string, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notes[uid] == nil {
		s.notes[uid] = map[string]skipNote{}
	}
	s.notes[uid][cluster] = skipNote{reason: reason, until: until}
}

// addFailing notes that cluster failed a create for namespace until until.
func (s *skipNotes) addFailing(cluster, namespace, reason string, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing[failingKey{cluster, namespace}] = skipNote{reason: reason, until: until}
}

// clearFailing forgets that cluster failed creates for namespace: one
// went through.
func (s *skipNotes) clearFailing(cluster, namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.failing, failingKey{cluster, namespace})
}

// failingFor returns why cluster is passed over for uid, a job of
// namespace, while it fails creates there, or "". The note is copied to
// uid's, so that next brings a pass when it ends.
func (s *skipNotes) failingFor(uid types.UID, cluster, namespace string, now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := failingKey{cluster, namespace}
	n, ok := s.failing[key]
	if !ok {
		return ""
	}
	if now.After(n.until) {
		delete(s.failing, key)
		return ""
	}
	if s.notes[uid] == nil {
		s.notes[uid] = map[string]skipNote{}
	}
	s.notes[uid][cluster] = n
	return n.reason
}

// reason returns why cluster is passed over for uid now, or "".
func (s *skipNotes) reason(uid types.UID, cluster string, now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.notes[uid][cluster]
	if !ok || now.After(n.until) {
		return ""
	}
	return n.reason
}

// next returns how long until the first of uid's notes in force ends, or
// 0 if none is: nothing else announces that a worker may be used again.
func (s *skipNotes) next(uid types.UID, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out time.Duration
	for _, n := range s.notes[uid] {
		// reason still holds at until itself.
		if d := n.until.Sub(now) + time.Millisecond; d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// forget drops the notes of a Workload that is gone or finished.
func (s *skipNotes) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.notes, uid)
}
