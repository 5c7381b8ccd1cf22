package benchstack

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// auditEvent is what the count needs of a kube-apiserver audit event
// (audit.k8s.io/v1 Event, one JSON object a line).
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// auditCounts are requests by client program (the user agent up to its
// first slash: "courier", "kueue-v0.19.1") and by "verb resource".
type auditCounts map[string]map[string]uint64

// countAudit counts the completed requests of user received in [from, to)
// in an audit log. Lines that are not events (a line cut short by a
// writer still running) are skipped and counted.
func countAudit(r io.Reader, user string, from, to time.Time) (auditCounts, int, error) {
	counts := auditCounts{}
	skipped := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			skipped++
			continue
		}
		if ev.User.Username != user || ev.Stage != "ResponseComplete" ||
			ev.RequestReceived.Before(from) || !ev.RequestReceived.Before(to) {
			continue
		}
		program, _, _ := strings.Cut(ev.UserAgent, "/")
		resource := "-"
		if ev.ObjectRef != nil {
			resource = ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				resource += "/" + ev.ObjectRef.Subresource
			}
		}
		add(counts, program, ev.Verb+" "+resource, 1)
	}
	if err := sc.Err(); err != nil {
		return nil, skipped, fmt.Errorf("reading an audit log: %w", err)
	}
	return counts, skipped, nil
}

// countAuditFile counts one worker's audit log; a missing log is an error,
// as auditing was asked for.
func countAuditFile(path, user string, from, to time.Time) (auditCounts, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("opening the audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	return countAudit(f, user, from, to)
}

// WorkerRequests are a dispatcher's requests to the workers during a phase,
// from the workers' audit logs: the identity's requests whose client
// program is the dispatcher's.
type WorkerRequests struct {
	// Total is every request; ForWorkloads the gets and writes of
	// objects, which workloads cause; Background the lists, watches,
	// health probes and discovery, made whatever the workloads.
	Total        uint64 `json:"total"`
	ForWorkloads uint64 `json:"forWorkloads"`
	Gets         uint64 `json:"gets"`
	Writes       uint64 `json:"writes"`
	Background   uint64 `json:"background"`
	// PerWorkload divides them by the jobs.
	PerWorkload struct {
		Total        float64 `json:"total"`
		ForWorkloads float64 `json:"forWorkloads"`
		Gets         float64 `json:"gets"`
		Writes       float64 `json:"writes"`
	} `json:"perWorkload"`
	// ByCall is by "verb resource", ByWorker by worker.
	ByCall   map[string]uint64 `json:"byCall"`
	ByWorker map[string]uint64 `json:"byWorker"`
	// OtherPrograms are the same identity's requests from other programs:
	// the idle dispatcher's informers.
	OtherPrograms map[string]uint64 `json:"otherPrograms,omitempty"`
}

// workerRequests totals the counts of every worker for the programs whose
// name starts with program, and divides by jobs.
func workerRequests(byWorker map[string]auditCounts, program string, jobs int) WorkerRequests {
	r := WorkerRequests{ByCall: map[string]uint64{}, ByWorker: map[string]uint64{}, OtherPrograms: map[string]uint64{}}
	for worker, counts := range byWorker {
		r.ByWorker[worker] += 0
		for prog, calls := range counts {
			for call, n := range calls {
				if !strings.HasPrefix(prog, program) {
					r.OtherPrograms[prog] += n
					continue
				}
				verb, resource, _ := strings.Cut(call, " ")
				r.ByCall[call] += n
				r.ByWorker[worker] += n
				r.Total += n
				switch {
				case isWrite(verb):
					r.Writes += n
				// A get of no resource is a health probe or discovery.
				case verb == "get" && resource != "-":
					r.Gets += n
				default:
					r.Background += n
				}
			}
		}
	}
	r.ForWorkloads = r.Gets + r.Writes
	if jobs > 0 {
		per := func(n uint64) float64 { return float64(n) / float64(jobs) }
		r.PerWorkload.Total, r.PerWorkload.ForWorkloads = per(r.Total), per(r.ForWorkloads)
		r.PerWorkload.Gets, r.PerWorkload.Writes = per(r.Gets), per(r.Writes)
	}
	if len(r.OtherPrograms) == 0 {
		r.OtherPrograms = nil
	}
	return r
}
