package benchstack

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/tools/localcluster"
)

// tracker records what became of each job of the run, as the informers
// report it: when it was submitted, its manager Workload and when that
// finished, and its copies on each worker.
type tracker struct {
	mu sync.Mutex
	// prefix starts the name of every job of the run.
	prefix string
	jobs   map[string]*jobRecord
	// jobOfWorkload maps a manager Workload's name, which its copies on
	// the workers keep, to its job.
	jobOfWorkload map[string]string
	// workloadCopies are the workers each manager Workload had a copy on.
	workloadCopies map[string]map[string]bool
}

// jobRecord is one TrainJob of the run.
type jobRecord struct {
	submitted time.Time
	// workload is the last version of the manager Workload seen.
	workload *kueue.Workload
	finished time.Time
	reason   string
	// copies are the TrainJob copies seen, by worker and UID.
	copies map[string]map[types.UID]*copyRecord
}

// copyRecord is one TrainJob copy on a worker.
type copyRecord struct {
	// started is set once the copy was seen unsuspended: it ran the job.
	started bool
	deleted bool
}

func newTracker(prefix string) *tracker {
	return &tracker{prefix: prefix, jobs: map[string]*jobRecord{}, jobOfWorkload: map[string]string{},
		workloadCopies: map[string]map[string]bool{}}
}

func (t *tracker) job(name string) *jobRecord {
	j := t.jobs[name]
	if j == nil {
		j = &jobRecord{copies: map[string]map[types.UID]*copyRecord{}}
		t.jobs[name] = j
	}
	return j
}

func (t *tracker) submitted(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.job(name).submitted = at
}

// managerWorkload records a version of a manager Workload owned by one of
// the run's TrainJobs, and the first time it was seen Finished.
func (t *tracker) managerWorkload(wl *kueue.Workload, at time.Time) {
	ref := metav1.GetControllerOf(wl)
	if ref == nil || ref.Kind != trainer.TrainJobKind || !strings.HasPrefix(ref.Name, t.prefix) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.job(ref.Name)
	j.workload = wl
	t.jobOfWorkload[wl.Name] = ref.Name
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadFinished); c != nil && c.Status == metav1.ConditionTrue && j.finished.IsZero() {
		j.finished, j.reason = at, c.Reason
	}
}

// trainJobCopy records a version of a TrainJob copy on a worker, or its
// deletion.
func (t *tracker) trainJobCopy(worker string, tj *trainer.TrainJob, deleted bool) {
	if !strings.HasPrefix(tj.Name, t.prefix) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.job(tj.Name)
	if j.copies[worker] == nil {
		j.copies[worker] = map[types.UID]*copyRecord{}
	}
	c := j.copies[worker][tj.UID]
	if c == nil {
		c = &copyRecord{}
		j.copies[worker][tj.UID] = c
	}
	c.started = c.started || !ptr.Deref(tj.Spec.Suspend, false)
	c.deleted = c.deleted || deleted
}

// workloadCopy records that a worker had a copy of a manager Workload.
func (t *tracker) workloadCopy(worker, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.workloadCopies[name] == nil {
		t.workloadCopies[name] = map[string]bool{}
	}
	t.workloadCopies[name][worker] = true
}

// progress counts the jobs submitted and finished, and, per worker, the
// jobs whose copy started there.
type progress struct {
	submitted, finished int
	// liveCopies are TrainJob copies not yet deleted.
	liveCopies int
	perWorker  map[string]int
}

func (t *tracker) progress(names []string) progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := progress{perWorker: map[string]int{}}
	for _, n := range names {
		j := t.jobs[n]
		if j == nil {
			continue
		}
		if !j.submitted.IsZero() {
			p.submitted++
		}
		if !j.finished.IsZero() {
			p.finished++
		}
		for w, uids := range j.copies {
			started := false
			for _, c := range uids {
				started = started || c.started
				if !c.deleted {
					p.liveCopies++
				}
			}
			if started {
				p.perWorker[w]++
			}
		}
	}
	return p
}

func (p progress) String() string {
	var per []string
	for _, w := range slices.Sorted(maps.Keys(p.perWorker)) {
		per = append(per, fmt.Sprintf("%s %d", w, p.perWorker[w]))
	}
	return fmt.Sprintf("%d submitted, %d Finished; started on %s", p.submitted, p.finished, strings.Join(per, ", "))
}

// unfinished describes up to limit of the named jobs whose manager Workload
// is not Finished, for a run that times out on them.
func (t *tracker) unfinished(names []string, limit int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, n := range names {
		j := t.jobs[n]
		switch {
		case len(out) == limit:
			return out
		case j == nil || j.submitted.IsZero():
			out = append(out, n+": not submitted")
		case j.workload == nil:
			out = append(out, n+": no Workload on the manager")
		case j.finished.IsZero():
			out = append(out, fmt.Sprintf("%s: %s; TrainJob copies on %v", n, describeWorkload(j.workload), slices.Sorted(maps.Keys(j.copies))))
		}
	}
	return out
}

// describeWorkload names a Workload's true conditions and the state of
// Courier's check.
func describeWorkload(wl *kueue.Workload) string {
	var conds []string
	for _, c := range wl.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			conds = append(conds, c.Type)
		}
	}
	check := "no check " + localcluster.CheckName
	for _, c := range wl.Status.AdmissionChecks {
		if c.Name == localcluster.CheckName {
			check = fmt.Sprintf("check %s %s: %q", c.Name, c.State, c.Message)
		}
	}
	return fmt.Sprintf("Workload %s [%s], %s", wl.Name, strings.Join(conds, " "), check)
}
