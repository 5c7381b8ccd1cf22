package soak

import (
	"fmt"
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
	// Notes are findings that do not break it, such as final statuses not
	// compared, or what a fault left undisturbed.
	Notes []string `json:"notes,omitempty"`
	// Unpromised are findings outside what Courier documents it promises
	// (an overlap on a worker whose own control plane was down longer than
	// workerLostTimeout): neither a pass nor a failure, reported apart.
	Unpromised []string `json:"unpromised,omitempty"`
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
	NoDisturbance    = "no job running when Courier was cut off from every worker, or restarted while one was out of reach, restarted or moved"
)

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
