package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

const (
	// onceJobs TrainJobs of one GPU each: three times the GPUs the local
	// workers have (2 x 2 nodes x 8), so that they queue on the manager and
	// Courier dispatches while earlier ones finish.
	onceJobs = 100
	// onceRunFor is how long the pods of every other TrainJob run, so that
	// status changes keep coming while others are dispatched and finish.
	onceRunFor = 20 * time.Second
	// onceStall fails the wait for the TrainJobs to complete when none has
	// completed for this long. On kind their pods really run, about one at
	// a time per worker, so the time all of them take follows the load of
	// the machine; a stall does not.
	onceStall = 3 * time.Minute
	// onceLimit bounds that wait however steadily they complete.
	onceLimit = 15 * time.Minute
	// runLabel tells this spec's TrainJobs apart, for its cleanup.
	runLabel = "e2e.courier.dev/run"
)

var _ = Describe("Exactly once, under load", func() {
	It("runs each of 100 TrainJobs on one worker only, and its owner sees its final status", func(ctx context.Context) {
		run := rand.String(5)
		names := make([]string, onceJobs)
		for i := range names {
			names[i] = fmt.Sprintf("once-%s-%03d", run, i)
		}
		DeferCleanup(deleteRun, run)

		// Watches start before any job exists, so that no version of a copy
		// goes unseen.
		logs := map[string]*trainJobLog{}
		for _, w := range workers {
			logs[w.name] = watchTrainJobs(ctx, w, namespace)
		}

		By(fmt.Sprintf("submitting %d TrainJobs, every other one with pods that run %s", onceJobs, onceRunFor))
		start := time.Now()
		for i, name := range names {
			b := trainertesting.MakeTrainJob(name, namespace).Queue(queue).Label(runLabel, run).
				ManagedBy(adapter.TrainJobManagedBy).GPUs(1)
			if i%2 == 1 {
				b.RunFor("example.com/user", onceRunFor)
			}
			Expect(manager.client.Create(ctx, b.Obj())).To(Succeed())
		}
		AddReportEntry("submitting the TrainJobs took", time.Since(start).Round(time.Second))

		By("waiting until every TrainJob is Complete on the manager")
		local := map[string]*trainer.TrainJob{}
		completed, progressed := 0, time.Now()
		Eventually(func(g Gomega) {
			list := &trainer.TrainJobList{}
			g.Expect(manager.client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{runLabel: run})).To(Succeed())
			var incomplete []string
			for i := range list.Items {
				tj := &list.Items[i]
				local[tj.Name] = tj
				if !meta.IsStatusConditionTrue(tj.Status.Conditions, trainer.TrainJobComplete) {
					incomplete = append(incomplete, tj.Name)
				}
			}
			g.Expect(local).To(HaveLen(onceJobs))
			if n := onceJobs - len(incomplete); n > completed {
				completed, progressed = n, time.Now()
			}
			// The last few are described with their copies, for a spec
			// that times out on them.
			if n := len(incomplete); n > 0 && n <= 5 {
				for i, name := range incomplete {
					incomplete[i] = fmt.Sprintf("%s: manager has %s; copies: %s", name, describe(local[name]), copiesOf(logs, name))
				}
			}
			if len(incomplete) > 0 && time.Since(progressed) > onceStall {
				StopTrying(fmt.Sprintf("no TrainJob completed for %s; %d of %d not Complete: %v",
					onceStall, len(incomplete), onceJobs, incomplete)).Now()
			}
			g.Expect(incomplete).To(BeEmpty(), "%d of %d not Complete", len(incomplete), onceJobs)
		}).WithTimeout(onceLimit).WithPolling(2 * time.Second).Should(Succeed())
		AddReportEntry("all TrainJobs Complete on the manager after", time.Since(start).Round(time.Second))

		By("waiting until every Workload is Finished, with Courier's check Ready, and every copy is deleted")
		uids := map[types.UID]string{}
		for name, tj := range local {
			uids[tj.UID] = name
		}
		Eventually(func(g Gomega) {
			list := &kueue.WorkloadList{}
			g.Expect(manager.client.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
			seen := sets.New[string]()
			for i := range list.Items {
				wl := &list.Items[i]
				ref := metav1.GetControllerOf(wl)
				if ref == nil || uids[ref.UID] == "" {
					continue
				}
				seen.Insert(uids[ref.UID])
				g.Expect(meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished)).To(BeTrue(),
					"Workload %s is not Finished", wl.Name)
				c := slices.IndexFunc(wl.Status.AdmissionChecks, func(c kueue.AdmissionCheckState) bool { return c.Name == checkName })
				g.Expect(c).NotTo(Equal(-1), "Workload %s has no check %q", wl.Name, checkName)
				g.Expect(wl.Status.AdmissionChecks[c].State).To(Equal(kueue.CheckStateReady), "Workload %s: %s",
					wl.Name, wl.Status.AdmissionChecks[c].Message)
			}
			g.Expect(seen).To(HaveLen(onceJobs), "Workloads found")
			for _, name := range names {
				for w, l := range logs {
					_, deleted, err := l.of(name)
					g.Expect(err).NotTo(HaveOccurred())
					for uid, gone := range deleted {
						g.Expect(gone).To(BeTrue(), "the copy %s (%s) on %s is not deleted", name, uid, w)
					}
				}
			}
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		AddReportEntry("all copies deleted after", time.Since(start).Round(time.Second))

		By("checking from the watches that each TrainJob had one copy, on one worker")
		var twice, recreated []string
		for _, name := range names {
			where := sets.New[string]()
			copies, started := 0, 0
			for _, w := range workers {
				versions, _, _ := logs[w.name].of(name)
				for _, uid := range copyUIDs(versions) {
					where.Insert(w.name)
					copies++
					if wasStarted(versions, uid) {
						started++
					}
				}
			}
			summary := fmt.Sprintf("%s: %d copies on %v, %d started: %s", name, copies, sets.List(where), started, copiesOf(logs, name))
			// A copy that was started ran the job; one removed while
			// still suspended did not, and is only reported.
			switch {
			case where.Len() != 1 || started != 1:
				twice = append(twice, summary)
			case copies > 1:
				recreated = append(recreated, summary)
			}
		}
		if len(recreated) > 0 {
			AddReportEntry("TrainJobs whose copy was removed before it started and created again on the same worker",
				strings.Join(recreated, "\n"))
		}
		Expect(twice).To(BeEmpty(), "every TrainJob must have copies on exactly one worker, and exactly one of them started")

		By("checking that each manager TrainJob has the final jobsStatus of its copy")
		// Once the copy is gone nothing changes the manager's status; the
		// wait only covers a write Courier may have in flight.
		Eventually(func(g Gomega) {
			list := &trainer.TrainJobList{}
			g.Expect(manager.client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{runLabel: run})).To(Succeed())
			var wrong []string
			for i := range list.Items {
				tj := &list.Items[i]
				w, final := finalCopy(logs, tj.Name)
				if final == nil || !equality.Semantic.DeepEqual(tj.Status.JobsStatus, final.Status.JobsStatus) {
					wrong = append(wrong, statusMismatch(logs, tj, w, final))
				}
			}
			g.Expect(wrong).To(BeEmpty(), "%d TrainJobs do not show their copy's final status", len(wrong))
		}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})
})

// finalCopy returns the last version of the TrainJob's last copy seen
// before its deletion began, and its worker. The spec has checked that
// copies were on one worker only.
func finalCopy(logs map[string]*trainJobLog, name string) (string, *trainer.TrainJob) {
	for w, l := range logs {
		versions, _, _ := l.of(name)
		if len(versions) == 0 {
			continue
		}
		last := versions[len(versions)-1].UID
		for i := len(versions) - 1; i >= 0; i-- {
			if versions[i].UID == last && versions[i].DeletionTimestamp == nil {
				return w, versions[i]
			}
		}
	}
	return "", nil
}

// copyUIDs returns the UIDs of the versions that carry Courier's origin
// label: each is one copy Courier created.
func copyUIDs(versions []*trainer.TrainJob) []types.UID {
	var uids []types.UID
	for _, v := range versions {
		if _, ok := v.Labels[courierv1alpha1.OriginLabel]; ok && !slices.Contains(uids, v.UID) {
			uids = append(uids, v.UID)
		}
	}
	return uids
}

// wasStarted reports whether the copy uid was ever unsuspended: then it
// ran the job.
func wasStarted(versions []*trainer.TrainJob, uid types.UID) bool {
	return slices.ContainsFunc(versions, func(v *trainer.TrainJob) bool { return v.UID == uid && !ptr.Deref(v.Spec.Suspend, false) })
}

// copiesOf describes every copy of the TrainJob name the watches saw:
// where and when it was created, whether it was started (unsuspended),
// completed and deleted.
func copiesOf(logs map[string]*trainJobLog, name string) string {
	var out []string
	for _, w := range workers {
		versions, deleted, _ := logs[w.name].of(name)
		for _, uid := range copyUIDs(versions) {
			var created metav1.Time
			n, complete := 0, false
			for _, v := range versions {
				if v.UID == uid {
					n++
					created = v.CreationTimestamp
					complete = complete || meta.IsStatusConditionTrue(v.Status.Conditions, trainer.TrainJobComplete)
				}
			}
			out = append(out, fmt.Sprintf("on %s uid=%s created=%s versions=%d started=%t complete=%t deleted=%t",
				w.name, uid, created.UTC().Format(time.TimeOnly), n, wasStarted(versions, uid), complete, deleted[uid]))
		}
	}
	if len(out) == 0 {
		return "none seen"
	}
	return "\n    " + strings.Join(out, "\n    ")
}

// statusMismatch describes a TrainJob whose manager status is not its
// copy's final one: both, and every version of the copy the watch saw.
func statusMismatch(logs map[string]*trainJobLog, local *trainer.TrainJob, worker string, final *trainer.TrainJob) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: manager has %s", local.Name, describe(local))
	if final == nil {
		b.WriteString("; no live copy was seen on any worker")
		return b.String()
	}
	fmt.Fprintf(&b, "; the copy's final version on %s has %s; its versions:", worker, describe(final))
	versions, _, _ := logs[worker].of(local.Name)
	for _, v := range versions {
		fmt.Fprintf(&b, "\n    %s", describe(v))
	}
	return b.String()
}

// describe summarizes a TrainJob version: resource version, generation,
// deletion, conditions and jobsStatus (active/ready/succeeded/failed/suspended).
func describe(tj *trainer.TrainJob) string {
	var conds, jobs []string
	for _, c := range tj.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	n := func(p *int32) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	for _, j := range tj.Status.JobsStatus {
		jobs = append(jobs, fmt.Sprintf("%s %s/%s/%s/%s/%s", j.Name, n(j.Active), n(j.Ready), n(j.Succeeded), n(j.Failed), n(j.Suspended)))
	}
	deleting := ""
	if tj.DeletionTimestamp != nil {
		deleting = " deleting"
	}
	return fmt.Sprintf("rv=%s gen=%d%s conditions=[%s] jobsStatus=[%s]", tj.ResourceVersion, tj.Generation, deleting,
		strings.Join(conds, " "), strings.Join(jobs, "; "))
}

// deleteRun deletes the spec's TrainJobs on the manager and waits until
// Courier has removed them everywhere, so that no later spec shares the
// quota with them.
func deleteRun(ctx context.Context, run string) {
	Expect(manager.client.DeleteAllOf(ctx, &trainer.TrainJob{}, client.InNamespace(namespace),
		client.MatchingLabels{runLabel: run}, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	Eventually(func(g Gomega) {
		for _, c := range append([]cluster{manager}, workers...) {
			list := &trainer.TrainJobList{}
			g.Expect(c.client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{runLabel: run})).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), "TrainJobs left on %s", c.name)
		}
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}
