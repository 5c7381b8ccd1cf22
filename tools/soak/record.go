package soak

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/tools/localcluster"
)

// Copy is one copy of a job on a worker, as the informers saw it; times
// are when a version was first seen, on this machine's clock.
type Copy struct {
	Worker  string    `json:"worker"`
	UID     types.UID `json:"uid"`
	Created time.Time `json:"created"`
	// Started is when it was first seen unsuspended: it ran the job.
	Started time.Time `json:"started,omitzero"`
	// Ended is when it was first seen Complete or Failed.
	Ended time.Time `json:"ended,omitzero"`
	// Deleted is when its deletion was first seen.
	Deleted time.Time `json:"deleted,omitzero"`
	// Status summarizes its last version before deletion began, or the
	// version that showed its end, should the first to show it come as it
	// goes.
	Status string `json:"status"`
	// StatusUnseen: the copy went while the soak's watch of its worker was
	// down, before the soak saw it end, so Status may not be its last.
	StatusUnseen bool `json:"statusUnseen,omitempty"`
}

// PodRun is one pod of a job on a worker: when it was created (the API
// server's clock, to the second), began Running and stopped (Succeeded,
// Failed, or deleted), as the soak's own watch of the worker's API server
// saw it, or as the pod's container statuses date it when the watch saw it
// more than a second late. These are the ground truth the overlap and
// restart checks read.
type PodRun struct {
	Worker  string    `json:"worker"`
	Pod     string    `json:"pod"`
	UID     types.UID `json:"uid"`
	Created time.Time `json:"created,omitzero"`
	Running time.Time `json:"running,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	// Outcome is how it stopped: Succeeded, Failed or Deleted.
	Outcome string `json:"outcome,omitempty"`
}

// Job is what became of one job of the soak.
type Job struct {
	JobSpec
	Submitted time.Time `json:"submitted,omitzero"`
	// Refused is the manager's answer to a submission refused on purpose
	// (a forbidden RuntimePatch); such a job never exists.
	Refused  string `json:"refused,omitempty"`
	Workload string `json:"workload,omitempty"`
	// Reserved are the times the manager's Kueue was seen reserving quota
	// for it: from then on a worker has room and the job waits on Courier.
	Reserved []time.Time `json:"reserved,omitempty"`
	// reservedNow is whether the last version seen holds quota.
	reservedNow bool
	Finished    time.Time `json:"finished,omitzero"`
	Reason      string    `json:"reason,omitempty"`
	// Check is the last state of Courier's admission check and its message.
	Check string `json:"check,omitempty"`
	// ManagerStatus summarizes the manager job's last version.
	ManagerStatus string    `json:"managerStatus,omitempty"`
	Copies        []*Copy   `json:"copies,omitempty"`
	Pods          []*PodRun `json:"pods,omitempty"`
	// RanOn is when its pods ran, per worker, at the end.
	RanOn []Span `json:"ranOn,omitempty"`
}

// Disconnection is a time Courier counted a worker out of use: from its
// WorkerCluster's status.disconnectedSince (one-second precision) until
// the status was seen without it. It is recorded for reading a run, and
// for restart-after-down to wait for; no check trusts it.
type Disconnection struct {
	Worker  string    `json:"worker"`
	Since   time.Time `json:"since"`
	Cleared time.Time `json:"cleared,omitzero"`
}

// recorder keeps what the informers report about the soak's jobs and the
// workers' connections.
type recorder struct {
	mu             sync.Mutex
	disconnections []*Disconnection
	jobs           map[string]*Job
	// order is the jobs' names in the order they were expected.
	order []string
}

func newRecorder() *recorder { return &recorder{jobs: map[string]*Job{}} }

// expect adds a job before it is submitted, so that nothing seen of it is
// dropped.
func (r *recorder) expect(spec JobSpec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.jobs[spec.Name] == nil {
		r.jobs[spec.Name] = &Job{JobSpec: spec}
		r.order = append(r.order, spec.Name)
	}
}

func (r *recorder) submitted(name string, at time.Time) {
	r.update(name, func(j *Job) { j.Submitted = at })
}

func (r *recorder) refused(name, answer string) {
	r.update(name, func(j *Job) { j.Refused = answer })
}

// update runs f on a known job.
func (r *recorder) update(name string, f func(*Job)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.jobs[name]; j != nil {
		f(j)
	}
}

// managerWorkload records a version of a manager Workload of a job.
func (r *recorder) managerWorkload(wl *kueue.Workload, at time.Time) {
	ref := metav1.GetControllerOf(wl)
	if ref == nil {
		return
	}
	r.update(ref.Name, func(j *Job) {
		j.Workload = wl.Name
		reserved := meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
		if reserved && !j.reservedNow {
			j.Reserved = append(j.Reserved, at)
		}
		j.reservedNow = reserved
		if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadFinished); c != nil && c.Status == metav1.ConditionTrue && j.Finished.IsZero() {
			j.Finished, j.Reason = at, c.Reason
		}
		for _, c := range wl.Status.AdmissionChecks {
			if c.Name == localcluster.CheckName {
				j.Check = fmt.Sprintf("%s: %s", c.State, c.Message)
			}
		}
	})
}

// workerCluster records a version of a WorkerCluster: a disconnection
// begins or ends.
func (r *recorder) workerCluster(wc *courier.WorkerCluster, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var open *Disconnection
	for _, d := range r.disconnections {
		if d.Worker == wc.Name && d.Cleared.IsZero() {
			open = d
		}
	}
	since := wc.Status.DisconnectedSince
	if open != nil && (since == nil || !open.Since.Equal(since.Time)) {
		open.Cleared = at
	}
	if since != nil && (open == nil || !open.Since.Equal(since.Time)) {
		r.disconnections = append(r.disconnections, &Disconnection{Worker: wc.Name, Since: since.Time})
	}
}

// disconnected returns a copy of the disconnections seen.
func (r *recorder) disconnected() []Disconnection {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Disconnection, len(r.disconnections))
	for i, d := range r.disconnections {
		out[i] = *d
	}
	return out
}

// managerJob records a version of a manager job.
func (r *recorder) managerJob(obj client.Object) {
	r.update(obj.GetName(), func(j *Job) { j.ManagerStatus = statusSummary(obj) })
}

// isCopy tells Courier's copies from what else the workers hold under a
// job's name: foreign objects lack the origin label, JobSet's child Jobs
// have a controller.
func isCopy(obj client.Object) bool {
	_, ok := obj.GetLabels()[courier.OriginLabel]
	return ok && metav1.GetControllerOf(obj) == nil
}

// workerCopy records a version, or the deletion, of a copy on a worker.
func (r *recorder) workerCopy(worker string, obj client.Object, d localcluster.Delivery, at time.Time) {
	if !isCopy(obj) {
		return
	}
	r.update(obj.GetName(), func(j *Job) {
		var c *Copy
		for _, have := range j.Copies {
			if have.Worker == worker && have.UID == obj.GetUID() {
				c = have
			}
		}
		if c == nil {
			c = &Copy{Worker: worker, UID: obj.GetUID(), Created: createdAt(obj, at)}
			j.Copies = append(j.Copies, c)
		}
		if c.Started.IsZero() && !suspended(obj) {
			c.Started = at
		}
		s := statusSummary(obj)
		ended := isFinal(s)
		if c.Ended.IsZero() && ended {
			c.Ended = at
		}
		if d.Gone() || obj.GetDeletionTimestamp() != nil {
			if c.Deleted.IsZero() {
				c.Deleted = at
			}
			if d == localcluster.DeletedUnwatched && c.Ended.IsZero() {
				c.StatusUnseen = true
			}
			// A watch that was down (its worker's API server restarted)
			// may first see a copy's end as the copy goes: that is still
			// how it ended. What a running copy shows as it goes is not.
			if ended {
				c.Status = s
			}
			return
		}
		c.Status = s
	})
}

// createdAt dates a copy first seen at: then, unless the API server dates
// its creation more than a second earlier, the precision it dates by. A
// watch that was down (its worker paused) sees a copy made meanwhile only
// once it is back, and the copy belongs to the dispatch made before.
func createdAt(obj client.Object, at time.Time) time.Time {
	return dated(at, obj.GetCreationTimestamp().Time)
}

// workerPod records a version, or the deletion, of a pod on a worker.
func (r *recorder) workerPod(worker string, pod *corev1.Pod, deleted bool, at time.Time) {
	name := pod.Labels["jobset.sigs.k8s.io/jobset-name"]
	if name == "" {
		name = pod.Labels[batchv1.JobNameLabel]
	}
	r.update(name, func(j *Job) {
		var p *PodRun
		for _, have := range j.Pods {
			if have.Worker == worker && have.UID == pod.UID {
				p = have
			}
		}
		if p == nil {
			p = &PodRun{Worker: worker, Pod: pod.Name, UID: pod.UID, Created: pod.CreationTimestamp.Time}
			j.Pods = append(j.Pods, p)
		}
		started, finished := containerTimes(pod)
		terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		if p.Running.IsZero() && (pod.Status.Phase == corev1.PodRunning || (terminal && !started.IsZero())) {
			// A pod first seen ended ran while the watch was down: its
			// containers date the run.
			p.Running = dated(at, started)
		}
		stopped := deleted || pod.DeletionTimestamp != nil || terminal
		if stopped && p.Ended.IsZero() {
			p.Ended, p.Outcome = at, "Deleted"
			if terminal {
				p.Ended, p.Outcome = dated(at, finished), string(pod.Status.Phase)
			}
		}
	})
}

// containerTimes are when a pod's containers started running, the earliest,
// and when they finished, the latest, as the worker dates them (to the
// second); zero when it does not.
func containerTimes(pod *corev1.Pod) (started, finished time.Time) {
	for _, cs := range pod.Status.ContainerStatuses {
		var s, f time.Time
		switch {
		case cs.State.Running != nil:
			s = cs.State.Running.StartedAt.Time
		case cs.State.Terminated != nil:
			s, f = cs.State.Terminated.StartedAt.Time, cs.State.Terminated.FinishedAt.Time
		}
		if !s.IsZero() && (started.IsZero() || s.Before(started)) {
			started = s
		}
		if f.After(finished) {
			finished = f
		}
	}
	return started, finished
}

// dated is when something first seen at happened: then, unless the worker
// dates it more than a second earlier, the precision it dates by, as when
// the soak's watch was down.
func dated(at, worker time.Time) time.Time {
	if !worker.IsZero() && worker.Add(time.Second).Before(at) {
		return worker
	}
	return at
}

// snapshot returns a copy of every job's record, in submission order.
func (r *recorder) snapshot() []Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Job, 0, len(r.order))
	for _, name := range r.order {
		j := *r.jobs[name]
		j.Reserved = slices.Clone(j.Reserved)
		j.Copies = make([]*Copy, len(r.jobs[name].Copies))
		for i, c := range r.jobs[name].Copies {
			cc := *c
			j.Copies[i] = &cc
		}
		j.Pods = make([]*PodRun, len(r.jobs[name].Pods))
		for i, p := range r.jobs[name].Pods {
			pp := *p
			j.Pods[i] = &pp
		}
		out = append(out, j)
	}
	return out
}

// suspended reports a job's spec.suspend.
func suspended(obj client.Object) bool {
	switch o := obj.(type) {
	case *trainer.TrainJob:
		return ptr.Deref(o.Spec.Suspend, false)
	case *batchv1.Job:
		return ptr.Deref(o.Spec.Suspend, false)
	}
	return false
}

// statusSummary is what the soak compares between a manager job and its
// copy: the terminal condition, and the counts of the child jobs (a
// TrainJob's jobsStatus) or of the pods (a batch Job).
func statusSummary(obj client.Object) string {
	switch o := obj.(type) {
	case *trainer.TrainJob:
		parts := []string{terminal(o.Status.Conditions, trainer.TrainJobComplete, trainer.TrainJobFailed)}
		for _, s := range o.Status.JobsStatus {
			parts = append(parts, fmt.Sprintf("%s active=%d ready=%d succeeded=%d failed=%d suspended=%d", s.Name,
				ptr.Deref(s.Active, 0), ptr.Deref(s.Ready, 0), ptr.Deref(s.Succeeded, 0), ptr.Deref(s.Failed, 0), ptr.Deref(s.Suspended, 0)))
		}
		return strings.Join(parts, "; ")
	case *batchv1.Job:
		var conds []metav1.Condition
		for _, c := range o.Status.Conditions {
			conds = append(conds, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status)})
		}
		return fmt.Sprintf("%s; active=%d ready=%d succeeded=%d failed=%d",
			terminal(conds, string(batchv1.JobComplete), string(batchv1.JobFailed)),
			o.Status.Active, ptr.Deref(o.Status.Ready, 0), o.Status.Succeeded, o.Status.Failed)
	}
	return ""
}

// terminal names the true terminal condition, or "Running".
func terminal(conds []metav1.Condition, complete, failed string) string {
	switch {
	case meta.IsStatusConditionTrue(conds, complete):
		return "Complete"
	case meta.IsStatusConditionTrue(conds, failed):
		return "Failed"
	}
	return "Running"
}
