package benchstack

import (
	"context"
	"strings"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/tools/localcluster"
)

// phaseJob is what one phase saw of one job, each time the first time it
// was seen.
type phaseJob struct {
	submitted     time.Time
	quotaReserved time.Time
	checkReady    time.Time
	finished      time.Time
	reason        string
	// final is when the manager job was first seen Complete or Failed.
	final time.Time
	// workerQuota is when a worker's Kueue was first seen to reserve quota
	// for a copy of the job's Workload, and onWorker when a copy of the
	// job was first seen on a worker: the two steps every dispatcher takes
	// between quota reserved on the manager and the check Ready.
	workerQuota time.Time
	onWorker    time.Time
	// running is when a copy of the job was first seen on a worker
	// unsuspended: the worker's Kueue admitted it and its pods are made.
	running time.Time
	// copies are the job's copies seen on each worker, by UID: true once
	// deleted.
	copies map[string]map[types.UID]bool
}

// phaseTracker records, from informers, what became of each job of one
// phase. The times are when the informers saw each change, to the
// millisecond, where the objects' own times count seconds.
type phaseTracker struct {
	mu     sync.Mutex
	prefix string
	check  string
	jobs   map[string]*phaseJob
	// jobOf maps the manager's Workloads to their jobs: copies on the
	// workers keep the Workload's name, not always its owner. earlyQuota
	// holds, by Workload name, a worker's quota seen before the manager's
	// Workload was, as informers of different clusters may deliver.
	jobOf      map[string]string
	earlyQuota map[string]time.Time
}

func newPhaseTracker(prefix, check string) *phaseTracker {
	return &phaseTracker{prefix: prefix, check: check, jobs: map[string]*phaseJob{},
		jobOf: map[string]string{}, earlyQuota: map[string]time.Time{}}
}

func (t *phaseTracker) job(name string) *phaseJob {
	j := t.jobs[name]
	if j == nil {
		j = &phaseJob{copies: map[string]map[types.UID]bool{}}
		t.jobs[name] = j
	}
	return j
}

func (t *phaseTracker) submitted(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.job(name).submitted = at
}

func setOnce(t *time.Time, at time.Time) {
	if t.IsZero() {
		*t = at
	}
}

// managerWorkload records quota reserved, the check Ready and Finished.
func (t *phaseTracker) managerWorkload(wl *kueue.Workload, at time.Time) {
	ref := metav1.GetControllerOf(wl)
	if ref == nil || !strings.HasPrefix(ref.Name, t.prefix) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.job(ref.Name)
	t.jobOf[wl.Name] = ref.Name
	if early, ok := t.earlyQuota[wl.Name]; ok {
		setOnce(&j.workerQuota, early)
		delete(t.earlyQuota, wl.Name)
	}
	if meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) {
		setOnce(&j.quotaReserved, at)
	}
	for _, c := range wl.Status.AdmissionChecks {
		if string(c.Name) == t.check && c.State == kueue.CheckStateReady {
			setOnce(&j.checkReady, at)
		}
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadFinished); c != nil && c.Status == metav1.ConditionTrue && j.finished.IsZero() {
		j.finished, j.reason = at, c.Reason
	}
}

// managerJob records the manager job's final status: a TrainJob or a
// batch Job Complete or Failed.
func (t *phaseTracker) managerJob(obj client.Object, at time.Time) {
	if !strings.HasPrefix(obj.GetName(), t.prefix) || !isFinal(obj) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	setOnce(&t.job(obj.GetName()).final, at)
}

func isFinal(obj client.Object) bool {
	switch o := obj.(type) {
	case *trainer.TrainJob:
		return meta.IsStatusConditionTrue(o.Status.Conditions, trainer.TrainJobComplete) ||
			meta.IsStatusConditionTrue(o.Status.Conditions, trainer.TrainJobFailed)
	case *batchv1.Job:
		for _, c := range o.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				return true
			}
		}
	}
	return false
}

// isSuspended tells a TrainJob or batch Job held by its queue.
func isSuspended(obj client.Object) bool {
	switch o := obj.(type) {
	case *trainer.TrainJob:
		return o.Spec.Suspend != nil && *o.Spec.Suspend
	case *batchv1.Job:
		return o.Spec.Suspend != nil && *o.Spec.Suspend
	}
	return false
}

// workerWorkload records the first quota a worker's Kueue reserved for a
// copy of one of the phase's Workloads. Both dispatchers keep the
// Workload's name.
func (t *phaseTracker) workerWorkload(wl *kueue.Workload, at time.Time) {
	if !meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	name, ok := t.jobOf[wl.Name]
	switch {
	case ok:
		setOnce(&t.job(name).workerQuota, at)
	case t.earlyQuota[wl.Name].IsZero():
		t.earlyQuota[wl.Name] = at
	}
}

// workerJob records a job's copy on a worker, or its deletion. Both
// dispatchers keep the job's name.
func (t *phaseTracker) workerJob(worker string, obj client.Object, deleted bool, at time.Time) {
	if !strings.HasPrefix(obj.GetName(), t.prefix) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.job(obj.GetName())
	if !deleted {
		setOnce(&j.onWorker, at)
		if !isSuspended(obj) {
			setOnce(&j.running, at)
		}
	}
	if j.copies[worker] == nil {
		j.copies[worker] = map[types.UID]bool{}
	}
	j.copies[worker][obj.GetUID()] = j.copies[worker][obj.GetUID()] || deleted
}

// snapshot copies the records of the named jobs, for a summary.
func (t *phaseTracker) snapshot(names []string) []phaseJob {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]phaseJob, 0, len(names))
	for _, n := range names {
		j := t.job(n)
		c := *j
		c.copies = map[string]map[types.UID]bool{}
		for w, uids := range j.copies {
			c.copies[w] = map[types.UID]bool{}
			for u, d := range uids {
				c.copies[w][u] = d
			}
		}
		out = append(out, c)
	}
	return out
}

// counts returns how many of the named jobs are Finished, have their final
// status on the manager, and have copies not yet deleted.
func (t *phaseTracker) counts(names []string) (finished, final, live int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range names {
		j := t.job(n)
		if !j.finished.IsZero() {
			finished++
		}
		if !j.final.IsZero() {
			final++
		}
		for _, uids := range j.copies {
			for _, deleted := range uids {
				if !deleted {
					live++
				}
			}
		}
	}
	return finished, final, live
}

// watchPhase starts informers feeding t until ctx ends: the manager's
// Workloads and the run's jobs, and the Workloads and jobs on every
// worker. Each event they receive is counted in tally, if not nil.
func watchPhase(ctx context.Context, env *localcluster.Env, run labels.Selector, t *phaseTracker, tally *eventTally) error {
	count := func(cluster string, obj client.Object) {
		if tally != nil {
			tally.seen(cluster, trackedResource(obj), obj)
		}
	}
	err := env.Inform(ctx, env.Manager, map[client.Object]cache.ByObject{
		&kueue.Workload{}:   {},
		&trainer.TrainJob{}: {Label: run},
		&batchv1.Job{}:      {Label: run},
	}, func(obj client.Object, _ localcluster.Delivery) {
		count(env.Manager, obj)
		if wl, ok := obj.(*kueue.Workload); ok {
			t.managerWorkload(wl, time.Now())
			return
		}
		t.managerJob(obj, time.Now())
	})
	if err != nil {
		return err
	}
	for _, w := range env.Workers {
		err := env.Inform(ctx, w, map[client.Object]cache.ByObject{&kueue.Workload{}: {}, &trainer.TrainJob{}: {}, &batchv1.Job{}: {}},
			func(obj client.Object, d localcluster.Delivery) {
				count(w, obj)
				if wl, ok := obj.(*kueue.Workload); ok {
					if !d.Gone() {
						t.workerWorkload(wl, time.Now())
					}
					return
				}
				t.workerJob(w, obj, d.Gone(), time.Now())
			})
		if err != nil {
			return err
		}
	}
	return nil
}

// trackedResource names the resource of an object the harness watches, as
// the API servers' watch metrics do.
func trackedResource(obj client.Object) string {
	switch obj.(type) {
	case *kueue.Workload:
		return resourceKey(kueue.SchemeGroupVersion.Group, "workloads")
	case *trainer.TrainJob:
		return resourceKey(trainer.GroupVersion.Group, "trainjobs")
	case *batchv1.Job:
		return resourceKey(batchv1.GroupName, "jobs")
	}
	return ""
}
