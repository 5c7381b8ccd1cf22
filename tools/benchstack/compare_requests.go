package benchstack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/courierdev/courier/tools/localcluster"
)

// SideRequests are the requests to one side's API servers over a phase,
// by identity ("program as user"), with the watch events each identity's
// watches received.
type SideRequests struct {
	ByIdentity map[string]*IdentityRequests `json:"byIdentity"`
	// Unattributed are watch events no watch of the window could take,
	// by resource (attributeWatchEvents).
	Unattributed watchTotals `json:"unattributed,omitempty"`
	// WatchSpans are the watches that ran in the window: what the watch
	// events were shared by.
	WatchSpans []watchSpan `json:"watchSpans,omitempty"`
}

// IdentityRequests are one identity's requests.
type IdentityRequests struct {
	Identity Identity `json:"identity"`
	APIRequests
}

func (s *SideRequests) of(id Identity) *IdentityRequests {
	if s.ByIdentity == nil {
		s.ByIdentity = map[string]*IdentityRequests{}
	}
	r := s.ByIdentity[id.String()]
	if r == nil {
		r = &IdentityRequests{Identity: id}
		s.ByIdentity[id.String()] = r
	}
	return r
}

// add puts one API server's window and its watch events, attributed, into s.
func (s *SideRequests) add(w windowAudit, events attributed) {
	for id, calls := range w.Requests {
		s.of(id).merge(calls, w.PeakQPS[id])
	}
	for id, byResource := range events.byIdentity {
		r := s.of(id)
		if r.WatchEvents == nil {
			r.WatchEvents, r.WatchBytes = map[string]float64{}, map[string]float64{}
		}
		for res, t := range byResource {
			r.WatchEvents[res] += t.Events
			r.WatchBytes[res] += t.Bytes
		}
	}
	for res, t := range events.unattributed {
		if s.Unattributed == nil {
			s.Unattributed = watchTotals{}
		}
		u := s.Unattributed[res]
		s.Unattributed[res] = watchTotal{Events: u.Events + t.Events, Bytes: u.Bytes + t.Bytes}
	}
	s.WatchSpans = append(s.WatchSpans, w.Watches...)
}

// Of sums the requests of every identity of program, and of user unless
// it is empty.
func (s SideRequests) Of(program, user string) APIRequests {
	var out APIRequests
	for _, key := range slices.Sorted(maps.Keys(s.ByIdentity)) {
		r := s.ByIdentity[key]
		if r.Identity.Program != program || (user != "" && r.Identity.User != user) {
			continue
		}
		out.merge(nil, r.PeakQPS)
		for c, n := range r.ByCall {
			sum := out.ByCall[c]
			sum.add(n)
			out.ByCall[c] = sum
		}
		if len(r.WatchEvents) > 0 && out.WatchEvents == nil {
			out.WatchEvents, out.WatchBytes = map[string]float64{}, map[string]float64{}
		}
		for res, n := range r.WatchEvents {
			out.WatchEvents[res] += n
			out.WatchBytes[res] += r.WatchBytes[res]
		}
	}
	return out
}

// auditedCluster is one cluster's audit log and watch metrics, read phase
// after phase.
type auditedCluster struct {
	name  string
	log   *auditLog
	watch watchTotals
}

// phaseAudit reads the manager's and the workers' audit logs and watch
// metrics around each phase.
type phaseAudit struct {
	manager *auditedCluster
	workers []*auditedCluster
}

func newPhaseAudit(env *localcluster.Env) *phaseAudit {
	a := &phaseAudit{manager: &auditedCluster{name: env.Manager, log: newAuditLog(env.AuditLog(env.Manager))}}
	for _, w := range env.Workers {
		a.workers = append(a.workers, &auditedCluster{name: w, log: newAuditLog(env.AuditLog(w))})
	}
	return a
}

// close lets go of the audit logs held open.
func (a *phaseAudit) close() {
	for _, c := range a.clusters() {
		c.log.close()
	}
}

func (a *phaseAudit) clusters() []*auditedCluster {
	return append([]*auditedCluster{a.manager}, a.workers...)
}

// start reads the API servers' watch event counts as the phase starts.
func (a *phaseAudit) start(ctx context.Context, env *localcluster.Env) error {
	for _, c := range a.clusters() {
		w, err := scrapeWatchEvents(ctx, env, c.name)
		if err != nil {
			return err
		}
		c.watch = w
	}
	return nil
}

// stop reads what each API server served in [from, to): the audit logs'
// requests and watches, the watch events counted since start, shared
// among the watches with what the harness saw (tally).
func (a *phaseAudit) stop(ctx context.Context, env *localcluster.Env, from, to time.Time, tally *eventTally, res *PhaseResult) error {
	window := to.Sub(from).Seconds()
	for _, c := range a.clusters() {
		after, err := scrapeWatchEvents(ctx, env, c.name)
		if err != nil {
			return err
		}
		w, err := c.log.window(from, to)
		if err != nil {
			return fmt.Errorf("counting the requests to %s: %w", c.name, err)
		}
		if w.Skipped > 1 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%d lines of %s's audit log were not events", w.Skipped, c.name))
		}
		if w.Rotations > 0 {
			if res.AuditRotations == nil {
				res.AuditRotations = map[string]int{}
			}
			res.AuditRotations[c.name] += w.Rotations
		}
		events := attributeWatchEvents(after.minus(c.watch), w.Watches, tally.of(c.name), window)
		side := &res.WorkerRequests
		if c == a.manager {
			side = &res.ManagerRequests
		}
		side.add(w, events)
	}
	return nil
}
