package soak

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Invariant is one final check, with the jobs or objects that break it.
type Invariant struct {
	Name      string   `json:"name"`
	Pass      bool     `json:"pass"`
	Offenders []string `json:"offenders,omitempty"`
	// Notes are findings that do not break it, such as overlaps the
	// lost-worker policy allows.
	Notes []string `json:"notes,omitempty"`
}

func invariant(name string, offenders []string, notes ...string) Invariant {
	return Invariant{Name: name, Pass: len(offenders) == 0, Offenders: offenders, Notes: notes}
}

// The invariants' names, as the report and docs/soak.md give them.
const (
	NoConcurrentRuns = "no job ran on two workers at the same time"
	NoLostJob        = "no job lost: every job finished"
	FinalStatus      = "each manager job's final status equals its worker's last status"
	NoOrphan         = "no orphan left on any worker"
	NoPendingCheck   = "no admission check left Pending on a finished Workload"
	NoWaitingForRoom = "no Workload waiting while a worker had room, after the faults"
	ForeignUntouched = "foreign same-name objects left alone"
	FaultsInjected   = "every scheduled fault was injected and restored"
)

// lostWindow is a time Courier counted a worker out of use because of an
// injected fault: the worker may run its jobs on, and after
// workerLostTimeout Courier dispatches them elsewhere.
type lostWindow struct {
	Worker     string
	Start, End time.Time
}

// outOfReach are the faults that take a worker out of Courier's reach or
// use; a WorkerCluster deleted is not one: its worker stays reachable and
// Courier removes its copies there before dispatching elsewhere.
var outOfReach = map[Kind]bool{PauseShort: true, PauseLong: true, APIServerKill: true, SecretBroken: true, SecretRotate: true}

// lostWindows returns the disconnections, as Courier recorded them on the
// WorkerClusters, that an out-of-reach fault on the same worker explains;
// one still open ends at end. Courier counts from disconnectedSince, which
// has one-second precision: a window starts a second early.
func lostWindows(disc []Disconnection, faults []*Fault, end time.Time) []lostWindow {
	var out []lostWindow
	for _, d := range disc {
		w := lostWindow{Worker: d.Worker, Start: d.Since.Add(-time.Second), End: d.Cleared}
		if w.End.IsZero() {
			w.End = end
		}
		if slices.ContainsFunc(faults, func(f *Fault) bool {
			return outOfReach[f.Kind] && f.Target == d.Worker && !f.Started.IsZero() &&
				f.Started.Before(w.End) && w.Start.Before(f.Restored)
		}) {
			out = append(out, w)
		}
	}
	return out
}

// interval is when one copy or pod of a job ran, and where; dispatched is
// when the copy it ran for was created.
type interval struct {
	worker, what           string
	dispatched, start, end time.Time
}

// runs returns when each copy and pod of a job ran: a copy from the time
// it was seen unsuspended to the time it was seen terminal or deleted, a
// pod from Running to Succeeded, Failed or deleted; one never stopped ends
// at end. A pod's run is dated from its copy's start, if earlier: a pod
// seen late, after a pause of its worker, belongs to the run its copy
// began, not to a new one.
func runs(j Job, end time.Time) []interval {
	stop := func(ts ...time.Time) time.Time {
		out := end
		for _, t := range ts {
			if !t.IsZero() && t.Before(out) {
				out = t
			}
		}
		return out
	}
	var out []interval
	for _, c := range j.Copies {
		if !c.Started.IsZero() {
			out = append(out, interval{c.Worker, "copy " + string(c.UID), c.Created, c.Started, stop(c.Ended, c.Deleted)})
		}
	}
	for _, p := range j.Pods {
		if p.Running.IsZero() {
			continue
		}
		run := interval{p.Worker, "pod " + p.Pod, p.Running, p.Running, stop(p.Ended)}
		if c := copyOfPod(j.Copies, p); c != nil {
			run.dispatched = c.Created
			if !c.Started.IsZero() && c.Started.Before(run.start) {
				run.what, run.start = fmt.Sprintf("pod %s of copy %s", p.Pod, c.UID), c.Started
			}
		}
		out = append(out, run)
	}
	return out
}

// copyOfPod finds the copy a pod was made for: the last one created on its
// worker before it, to the second the API server dates objects by, and not
// deleted before it; nil if none is.
func copyOfPod(copies []*Copy, p *PodRun) *Copy {
	if p.Created.IsZero() {
		return nil
	}
	var found *Copy
	for _, c := range copies {
		if c.Worker != p.Worker || c.Created.After(p.Created.Add(time.Second)) ||
			(!c.Deleted.IsZero() && c.Deleted.Before(p.Created)) {
			continue
		}
		if found == nil || c.Created.After(found.Created) {
			found = c
		}
	}
	return found
}

// checkOverlaps finds jobs that ran on two workers at once. An overlap is
// allowed, and returned as a note, when it is Courier's documented
// lost-worker policy (see lostWorkerAllows).
func checkOverlaps(jobs []Job, lost []lostWindow, lostTimeout time.Duration, end time.Time) (offenders, allowed []string) {
	for _, j := range jobs {
		rs := runs(j, end)
		slices.SortFunc(rs, func(a, b interval) int { return a.start.Compare(b.start) })
		bad, ok := "", ""
		for i, a := range rs {
			for _, b := range rs[i+1:] {
				if a.worker == b.worker || !b.start.Before(a.end) {
					continue
				}
				desc := fmt.Sprintf("%s: %s on %s ran %s–%s, %s on %s ran %s–%s", j.Name, a.what, a.worker,
					clock(a.start), clock(a.end), b.what, b.worker, clock(b.start), clock(b.end))
				if lostWorkerAllows(a, b, lost, lostTimeout) {
					ok = desc
				} else if bad == "" {
					bad = desc
				}
			}
		}
		if bad != "" {
			offenders = append(offenders, bad)
		} else if ok != "" {
			allowed = append(allowed, ok)
		}
	}
	return offenders, allowed
}

// lostWorkerAllows says whether two overlapping runs are what the
// lost-worker policy lets happen: the earlier-dispatched run's worker was
// out of use because of a fault, the later run's copy was created
// workerLostTimeout or more after Courier counted it out, while it still
// was, and the stale run ended within workerLostTimeout of the worker's
// return, when Courier removes it. A worker out of reach again before
// that (a second pause seconds after the first ended) gives Courier the
// same time from its next return. Runs are told apart by when their copies
// were created, not by when they were seen running: a lost worker's copy
// may start, or be seen, only once it is back, and the job's other copy
// may start after that too.
func lostWorkerAllows(a, b interval, lost []lostWindow, lostTimeout time.Duration) bool {
	stale, moved := a, b
	if b.dispatched.Before(a.dispatched) {
		stale, moved = b, a
	}
	var windows []lostWindow
	for _, w := range lost {
		if w.Worker == stale.worker {
			windows = append(windows, w)
		}
	}
	slices.SortFunc(windows, func(x, y lostWindow) int { return x.Start.Compare(y.Start) })
	for i, w := range windows {
		if !moved.dispatched.Before(w.Start.Add(lostTimeout)) && !moved.dispatched.After(w.End) &&
			!stale.end.After(backForGood(windows[i:], lostTimeout).Add(lostTimeout)) {
			return true
		}
	}
	return false
}

// backForGood is when a worker came back from the first of its lost
// windows, sorted by start, for longer than lostTimeout: a window that
// began sooner after a return extends the loss.
func backForGood(windows []lostWindow, lostTimeout time.Duration) time.Time {
	back := windows[0].End
	for _, next := range windows[1:] {
		if next.Start.After(back.Add(lostTimeout)) {
			break
		}
		if next.End.After(back) {
			back = next.End
		}
	}
	return back
}

func clock(t time.Time) string { return t.Format("15:04:05.000") }

// checkLost returns the submitted jobs that did not run to their end:
// their Workload never finished, or finished while the manager's job was
// neither Complete nor Failed.
func checkLost(jobs []Job) []string {
	var out []string
	for _, j := range jobs {
		switch {
		case j.Refused != "":
		case j.Finished.IsZero():
			out = append(out, fmt.Sprintf("%s: submitted %s, check %q, %d copies", j.Name, clock(j.Submitted), j.Check, len(j.Copies)))
		case !isFinal(j.ManagerStatus):
			out = append(out, fmt.Sprintf("%s: its Workload finished (%s) while the job shows %q; check %q", j.Name, j.Reason, j.ManagerStatus, j.Check))
		}
	}
	return out
}

// finalCopy is the copy that ran a job to its end: the last one seen
// terminal, else the last one started, else the last one whose later
// versions went unseen (seen only suspended, then started and ended while
// the soak's watch of its worker was down).
func finalCopy(j Job) *Copy {
	var last *Copy
	for _, c := range j.Copies {
		if !c.Ended.IsZero() && (last == nil || c.Created.After(last.Created)) {
			last = c
		}
	}
	if last != nil {
		return last
	}
	for _, c := range j.Copies {
		if !c.Started.IsZero() && (last == nil || c.Created.After(last.Created)) {
			last = c
		}
	}
	if last != nil {
		return last
	}
	for _, c := range j.Copies {
		if c.StatusUnseen && (last == nil || c.Created.After(last.Created)) {
			last = c
		}
	}
	return last
}

// checkStatus returns the finished jobs whose manager status is not their
// final copy's last one.
func checkStatus(jobs []Job) (offenders, notes []string) {
	for _, j := range jobs {
		if j.Refused != "" || j.Finished.IsZero() {
			continue
		}
		c := finalCopy(j)
		if w := podRanOn(j); c == nil && w != "" {
			// The watch of the copy's kind on its worker was down (still
			// backing off after the API server came back) for the copy's
			// whole life, that of pods was not: the pod says where the job
			// ran, and the copy is checked as one whose end went unseen.
			c = &Copy{Worker: w, StatusUnseen: true, Status: "nothing; its pod was seen running"}
		}
		switch {
		case c == nil:
			offenders = append(offenders, fmt.Sprintf("%s: finished (%s) and no copy of it was seen running", j.Name, j.Reason))
		case c.StatusUnseen && !isFinal(j.ManagerStatus):
			offenders = append(offenders, fmt.Sprintf("%s: manager has %q, not a final status; its copy on %s went unseen, last seen %q",
				j.Name, j.ManagerStatus, c.Worker, c.Status))
		case c.StatusUnseen:
			// What the worker showed last is unknown: the owner sees a
			// final status, and that much is checked.
			notes = append(notes, fmt.Sprintf("not compared: %s's copy on %s went while the soak's watch of %s was down, last seen %q; the manager has %q",
				j.Name, c.Worker, c.Worker, c.Status, j.ManagerStatus))
		case c.Status != j.ManagerStatus:
			offenders = append(offenders, fmt.Sprintf("%s: manager has %q, its copy on %s had %q", j.Name, j.ManagerStatus, c.Worker, c.Status))
		}
	}
	return offenders, notes
}

// podRanOn is the worker of the last pod of j seen running, "" if none.
func podRanOn(j Job) string {
	var last *PodRun
	for _, p := range j.Pods {
		if !p.Running.IsZero() && (last == nil || p.Running.After(last.Running)) {
			last = p
		}
	}
	if last == nil {
		return ""
	}
	return last.Worker
}

// isFinal tells a status summary of a job that ended.
func isFinal(status string) bool {
	return strings.HasPrefix(status, "Complete") || strings.HasPrefix(status, "Failed")
}

// checkPendingChecks returns the finished Workloads whose check is Pending.
func checkPendingChecks(wls []kueue.Workload, check kueue.AdmissionCheckReference) []string {
	var out []string
	for _, wl := range wls {
		if !meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
			continue
		}
		for _, c := range wl.Status.AdmissionChecks {
			if c.Name == check && c.State == kueue.CheckStatePending {
				out = append(out, fmt.Sprintf("%s: check %s Pending: %s", wl.Name, c.Name, c.Message))
			}
		}
	}
	return out
}

// copyLag allows for the informers of the manager and of a worker seeing
// a reservation and the copy it led to in the other order.
const copyLag = 2 * time.Second

// checkWaiting returns the jobs that waited on Courier longer than bound
// after quiet, the end of the last fault: from a quota reservation on the
// manager, which Kueue makes only when the workers' pooled quota has room,
// to the creation of a copy on a worker. A job waiting for quota waits on
// Kueue, not on Courier, and is not counted.
func checkWaiting(jobs []Job, quiet, end time.Time, bound time.Duration) []string {
	var out []string
	for _, j := range jobs {
		if j.Refused != "" {
			continue
		}
		done := end
		if !j.Finished.IsZero() {
			done = j.Finished
		}
		for _, r := range j.Reserved {
			until := done
			for _, c := range j.Copies {
				if !c.Created.Before(r.Add(-copyLag)) && c.Created.Before(until) {
					until = c.Created
				}
			}
			start := r
			if start.Before(quiet) {
				start = quiet
			}
			if until.Sub(start) > bound {
				out = append(out, fmt.Sprintf("%s: quota reserved on the manager at %s, no copy until %s (%s after the faults ended)",
					j.Name, clock(r), clock(until), until.Sub(start).Round(time.Second)))
				break
			}
		}
	}
	return out
}
