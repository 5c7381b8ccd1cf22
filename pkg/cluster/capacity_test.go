package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/placement"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

func clusterQueue(name, cohort string, groups ...kueue.ResourceGroup) kueue.ClusterQueue {
	return kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kueue.ClusterQueueSpec{CohortName: kueue.CohortReference(cohort), ResourceGroups: groups},
	}
}

func group(covered []corev1.ResourceName, flavors ...kueue.FlavorQuotas) kueue.ResourceGroup {
	return kueue.ResourceGroup{CoveredResources: covered, Flavors: flavors}
}

func flavorQuotas(name string, quotas ...kueue.ResourceQuota) kueue.FlavorQuotas {
	return kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(name), Resources: quotas}
}

// resourceQuota is a resource's nominal quota and, if given and not empty, its
// borrowing and lending limits.
func resourceQuota(res corev1.ResourceName, nominal string, limits ...string) kueue.ResourceQuota {
	q := kueue.ResourceQuota{Name: res, NominalQuota: resource.MustParse(nominal)}
	if len(limits) > 0 && limits[0] != "" {
		q.BorrowingLimit = ptr.To(resource.MustParse(limits[0]))
	}
	if len(limits) > 1 && limits[1] != "" {
		q.LendingLimit = ptr.To(resource.MustParse(limits[1]))
	}
	return q
}

// used is a flavor's usage: resource names and amounts, alternating.
func used(flavor string, pairs ...string) kueue.FlavorUsage {
	u := kueue.FlavorUsage{Name: kueue.ResourceFlavorReference(flavor)}
	for i := 0; i+1 < len(pairs); i += 2 {
		u.Resources = append(u.Resources, kueue.ResourceUsage{Name: corev1.ResourceName(pairs[i]), Total: resource.MustParse(pairs[i+1])})
	}
	return u
}

func withUsage(cq kueue.ClusterQueue, usage ...kueue.FlavorUsage) kueue.ClusterQueue {
	cq.Status.FlavorsUsage = usage
	return cq
}

func localQueue(ns, name, cq string) kueue.LocalQueue {
	return kueue.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq)},
	}
}

// gpuQueue has one flavor of GPUs, in a cohort.
func gpuQueue(name, cohort, nominal string, limits ...string) kueue.ClusterQueue {
	return clusterQueue(name, cohort, group([]corev1.ResourceName{gpu}, flavorQuotas("a100", resourceQuota(gpu, nominal, limits...))))
}

func gpus(nominal, borrowable, usage, pending int64) placement.Capacity {
	return placement.Capacity{Flavors: []placement.Flavor{{Name: "a100", Resources: map[corev1.ResourceName]placement.Quota{
		gpu: {Nominal: nominal * 1000, Borrowable: borrowable * 1000, Usage: usage * 1000, Pending: pending * 1000},
	}}}}
}

// waitingCopy asks for n pods of one GPU and two CPUs each.
func waitingCopy(name, queue string, n int32) kueue.Workload {
	wl := kueuetesting.MakeWorkload(name, "ml").Queue(queue).Count(n).Annotation(courier.ManagerUIDAnnotation, "uid-"+name).Obj()
	wl.Spec.PodSets[0].Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), gpu: resource.MustParse("1"),
	}
	return *wl
}

// heldCopy holds one a100 GPU in cq, reserved by the worker's Kueue.
func heldCopy(name, cq string) kueue.Workload {
	return *kueuetesting.MakeWorkload(name, "ml").Queue(cq).ReserveQuota(cq).Assigned(gpu, "a100", "1").
		Annotation(courier.ManagerUIDAnnotation, "uid-"+name).Obj()
}

func TestComputeCapacity(t *testing.T) {
	allFlavors := sets.New("a100", "h100", "default")
	mixed := clusterQueue("mixed", "",
		group([]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
			flavorQuotas("default", resourceQuota(corev1.ResourceCPU, "32"), resourceQuota(corev1.ResourceMemory, "128Gi"))),
		group([]corev1.ResourceName{gpu},
			flavorQuotas("h100", resourceQuota(gpu, "8")),
			flavorQuotas("a100", resourceQuota(gpu, "16"))))
	mixed.Status.FlavorsReservation = []kueue.FlavorUsage{used("h100", string(gpu), "6"), used("default", "cpu", "10500m", "memory", "64Gi")}
	mixed.Status.FlavorsUsage = []kueue.FlavorUsage{used("h100", string(gpu), "4"), used("a100", string(gpu), "2")}

	cases := map[string]struct {
		objs          capacityObjects
		want          map[string]placement.Capacity // by namespace/LocalQueue
		wantResources []courier.ResourceCapacity
		wantSummary   string
		// wantShown are the manager Workloads whose copies the snapshot
		// saw.
		wantShown []types.UID
	}{
		"no ClusterQueues": {
			objs:        capacityObjects{LocalQueues: []kueue.LocalQueue{localQueue("ml", "lq", "gone")}},
			want:        map[string]placement.Capacity{"ml/lq": {ClusterQueue: "gone"}, "ml/other": {}},
			wantSummary: "no ClusterQueues",
		},
		"flavors in the queue's order, usage from the reservation": {
			objs: capacityObjects{
				ClusterQueues:   []kueue.ClusterQueue{mixed},
				LocalQueues:     []kueue.LocalQueue{localQueue("ml", "lq", "mixed")},
				ResourceFlavors: allFlavors,
			},
			want: map[string]placement.Capacity{"ml/lq": {Known: true, ClusterQueue: "mixed", Flavors: []placement.Flavor{
				{Name: "default", Resources: map[corev1.ResourceName]placement.Quota{
					corev1.ResourceCPU:    {Nominal: 32000, Usage: 10500},
					corev1.ResourceMemory: {Nominal: 128 << 30 * 1000, Usage: 64 << 30 * 1000},
				}},
				{Name: "h100", Resources: map[corev1.ResourceName]placement.Quota{gpu: {Nominal: 8000, Usage: 6000}}},
				{Name: "a100", Resources: map[corev1.ResourceName]placement.Quota{gpu: {Nominal: 16000, Usage: 2000}}},
			}}},
			wantResources: []courier.ResourceCapacity{
				capacity("a100", gpu, "16", "2", ""),
				capacity("default", corev1.ResourceCPU, "32", "10500m", ""),
				capacity("default", corev1.ResourceMemory, "128Gi", "64Gi", ""),
				capacity("h100", gpu, "8", "6", ""),
			},
			wantSummary: "nvidia.com/gpu 8/24, cpu 10.5/32, memory 64Gi/128Gi",
		},
		"borrowing within the cohort, lending limits and the borrowing limit": {
			objs: capacityObjects{
				ClusterQueues: []kueue.ClusterQueue{
					gpuQueue("self", "research", "4", "5"),
					withUsage(gpuQueue("lends-two", "research", "8", "", "2"), used("a100", string(gpu), "1")),
					withUsage(gpuQueue("busy", "research", "8"), used("a100", string(gpu), "3")),
					clusterQueue("other-flavor", "research", group([]corev1.ResourceName{gpu}, flavorQuotas("h100", resourceQuota(gpu, "8")))),
					gpuQueue("other-cohort", "elsewhere", "8"),
					gpuQueue("alone", "", "2"),
				},
				LocalQueues: []kueue.LocalQueue{
					localQueue("ml", "self", "self"), localQueue("ml", "busy", "busy"), localQueue("ml", "alone", "alone"),
				},
				ResourceFlavors: allFlavors,
			},
			want: map[string]placement.Capacity{
				// min(2, 8-1) + min(8, 8-3) = 7, capped at 5.
				"ml/self": named("self", gpus(4, 5, 0, 0)),
				// min(2, 7) from lends-two, 4 from self.
				"ml/busy":  named("busy", gpus(8, 6, 3, 0)),
				"ml/alone": named("alone", gpus(2, 0, 0, 0)),
			},
			wantResources: []courier.ResourceCapacity{
				capacity("a100", gpu, "30", "4", ""),
				capacity("h100", gpu, "8", "0", ""),
			},
			wantSummary: "nvidia.com/gpu 4/38",
		},
		"a queue that borrows leaves less to lend": {
			objs: capacityObjects{
				ClusterQueues: []kueue.ClusterQueue{
					gpuQueue("self", "research", "4"),
					withUsage(gpuQueue("borrower", "research", "8"), used("a100", string(gpu), "10")),
					gpuQueue("idle", "research", "8"),
				},
				LocalQueues:     []kueue.LocalQueue{localQueue("ml", "self", "self"), localQueue("ml", "borrower", "borrower")},
				ResourceFlavors: allFlavors,
			},
			want: map[string]placement.Capacity{
				// 8 idle, less the 2 the borrower took.
				"ml/self": named("self", gpus(4, 6, 0, 0)),
				// It already holds 2 of the 12 others' quota: 10 more fit.
				"ml/borrower": named("borrower", gpus(8, 12, 10, 0)),
			},
			wantResources: []courier.ResourceCapacity{capacity("a100", gpu, "20", "10", "")},
			wantSummary:   "nvidia.com/gpu 10/20",
		},
		"pending demand of the waiting copies, in the first flavor listing each resource": {
			objs: capacityObjects{
				ClusterQueues: []kueue.ClusterQueue{
					mixed,
					clusterQueue("pods", "", group([]corev1.ResourceName{corev1.ResourcePods}, flavorQuotas("default", resourceQuota(corev1.ResourcePods, "10")))),
				},
				LocalQueues:     []kueue.LocalQueue{localQueue("ml", "lq", "mixed"), localQueue("ml", "pods", "pods")},
				ResourceFlavors: allFlavors,
				Workloads: []kueue.Workload{
					waitingCopy("waits", "lq", 2),
					waitingCopy("waits-too", "lq", 1),
					*kueuetesting.MakeWorkload("counted-in-pods", "ml").Queue("pods").Count(3).Obj(),
					*kueuetesting.MakeWorkload("reserved", "ml").Queue("lq").ReserveQuota("mixed").Obj(),
					*kueuetesting.MakeWorkload("finished", "ml").Queue("lq").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", time.Time{}).Obj(),
					*kueuetesting.MakeWorkload("deactivated", "ml").Queue("lq").Active(false).Obj(),
					*kueuetesting.MakeWorkload("deleting", "ml").Queue("lq").Deleting(time.Time{}).Obj(),
					*kueuetesting.MakeWorkload("no-such-queue", "ml").Queue("nope").Obj(),
					*kueuetesting.MakeWorkload("other-namespace", "other").Queue("lq").Obj(),
				},
			},
			wantShown: []types.UID{"uid-waits", "uid-waits-too"},
			want: map[string]placement.Capacity{
				"ml/lq": {Known: true, ClusterQueue: "mixed", Flavors: []placement.Flavor{
					{Name: "default", Resources: map[corev1.ResourceName]placement.Quota{
						corev1.ResourceCPU:    {Nominal: 32000, Usage: 10500, Pending: 6000},
						corev1.ResourceMemory: {Nominal: 128 << 30 * 1000, Usage: 64 << 30 * 1000},
					}},
					{Name: "h100", Resources: map[corev1.ResourceName]placement.Quota{gpu: {Nominal: 8000, Usage: 6000, Pending: 3000}}},
					{Name: "a100", Resources: map[corev1.ResourceName]placement.Quota{gpu: {Nominal: 16000, Usage: 2000}}},
				}},
				"ml/pods": {Known: true, ClusterQueue: "pods", Flavors: []placement.Flavor{
					{Name: "default", Resources: map[corev1.ResourceName]placement.Quota{corev1.ResourcePods: {Nominal: 10000, Pending: 3000}}},
				}},
			},
			wantResources: []courier.ResourceCapacity{
				capacity("a100", gpu, "16", "2", ""),
				capacity("default", corev1.ResourceCPU, "32", "10500m", "6"),
				capacity("default", corev1.ResourceMemory, "128Gi", "64Gi", ""),
				capacity("default", corev1.ResourcePods, "10", "0", "3"),
				capacity("h100", gpu, "8", "6", "3"),
			},
			wantSummary: "nvidia.com/gpu 8/24, cpu 10.5/32, memory 64Gi/128Gi, pods 0/10",
		},
		"copies Kueue just reserved hold quota before the ClusterQueue's status says so": {
			objs: capacityObjects{
				ClusterQueues: []kueue.ClusterQueue{
					// The status counts one copy; three hold 1 GPU each.
					withUsage(gpuQueue("lagging", "", "6"), used("a100", string(gpu), "1")),
					// The status counts more than Courier's copies hold.
					withUsage(gpuQueue("shared", "", "6"), used("a100", string(gpu), "5")),
				},
				LocalQueues:     []kueue.LocalQueue{localQueue("ml", "lagging", "lagging"), localQueue("ml", "shared", "shared")},
				ResourceFlavors: allFlavors,
				Workloads: []kueue.Workload{
					heldCopy("one", "lagging"), heldCopy("two", "lagging"), heldCopy("three", "lagging"),
					heldCopy("mine", "shared"),
					*kueuetesting.MakeWorkload("finished", "ml").Queue("lagging").ReserveQuota("lagging").Assigned(gpu, "a100", "4").
						Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", time.Time{}).Annotation(courier.ManagerUIDAnnotation, "uid-finished").Obj(),
					*kueuetesting.MakeWorkload("deleting", "ml").Queue("lagging").ReserveQuota("lagging").Assigned(gpu, "a100", "4").Deleting(time.Time{}).Obj(),
				},
			},
			wantShown: []types.UID{"uid-finished", "uid-mine", "uid-one", "uid-three", "uid-two"},
			want: map[string]placement.Capacity{
				"ml/lagging": named("lagging", gpus(6, 0, 3, 0)),
				"ml/shared":  named("shared", gpus(6, 0, 5, 0)),
			},
			wantResources: []courier.ResourceCapacity{capacity("a100", gpu, "12", "8", "")},
			wantSummary:   "nvidia.com/gpu 8/12",
		},
		"queues that cannot admit are not offered, nor lend": {
			objs: capacityObjects{
				ClusterQueues: []kueue.ClusterQueue{
					gpuQueue("self", "research", "4"),
					func() kueue.ClusterQueue {
						cq := gpuQueue("held", "research", "8")
						cq.Spec.StopPolicy = ptr.To(kueue.Hold)
						return cq
					}(),
					clusterQueue("no-flavor", "research", group([]corev1.ResourceName{gpu}, flavorQuotas("missing", resourceQuota(gpu, "8")))),
					func() kueue.ClusterQueue {
						cq := gpuQueue("deleting", "research", "8")
						cq.DeletionTimestamp = ptr.To(metav1.Now())
						return cq
					}(),
				},
				LocalQueues: []kueue.LocalQueue{
					localQueue("ml", "self", "self"), localQueue("ml", "held", "held"),
					localQueue("ml", "no-flavor", "no-flavor"), localQueue("ml", "deleting", "deleting"),
					func() kueue.LocalQueue {
						lq := localQueue("ml", "stopped", "self")
						lq.Spec.StopPolicy = ptr.To(kueue.HoldAndDrain)
						return lq
					}(),
				},
				ResourceFlavors: allFlavors,
			},
			want: map[string]placement.Capacity{
				"ml/self":      named("self", gpus(4, 0, 0, 0)),
				"ml/held":      {ClusterQueue: "held"},
				"ml/no-flavor": {ClusterQueue: "no-flavor"},
				"ml/deleting":  {ClusterQueue: "deleting"},
				"ml/stopped":   {},
			},
			wantResources: []courier.ResourceCapacity{
				capacity("a100", gpu, "12", "0", ""),
				capacity("missing", gpu, "8", "0", ""),
			},
			wantSummary: "nvidia.com/gpu 0/20",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap := computeCapacity(tc.objs)
			got := map[string]placement.Capacity{}
			for key := range tc.want {
				ns, lq, _ := strings.Cut(key, "/")
				got[key] = snap.capacity(ns, lq, "")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("capacity per LocalQueue mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantResources, snap.resources, quantities); diff != "" {
				t.Errorf("resources mismatch (-want +got):\n%s", diff)
			}
			if snap.summary != tc.wantSummary {
				t.Errorf("summary = %q, want %q", snap.summary, tc.wantSummary)
			}
			if diff := cmp.Diff(tc.wantShown, sets.List(snap.shown), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("copies shown (-want +got):\n%s", diff)
			}
		})
	}
}

var quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func capacity(flavor string, res corev1.ResourceName, nominal, usage, pending string) courier.ResourceCapacity {
	c := courier.ResourceCapacity{Flavor: flavor, Resource: string(res), Nominal: resource.MustParse(nominal), Usage: resource.MustParse(usage)}
	if pending != "" {
		c.Pending = ptr.To(resource.MustParse(pending))
	}
	return c
}

func named(cq string, c placement.Capacity) placement.Capacity {
	c.Known, c.ClusterQueue = true, cq
	return c
}

func TestCapacityBounds(t *testing.T) {
	var flavors []kueue.FlavorQuotas
	covered := []corev1.ResourceName{}
	for i := range 20 {
		covered = append(covered, corev1.ResourceName(fmt.Sprintf("vendor-%02d.example.com/accelerator", i)))
	}
	for i := range 4 {
		var quotas []kueue.ResourceQuota
		for _, res := range covered {
			quotas = append(quotas, resourceQuota(res, "1"))
		}
		flavors = append(flavors, flavorQuotas(fmt.Sprintf("flavor-%d", i), quotas...))
	}
	snap := computeCapacity(capacityObjects{ClusterQueues: []kueue.ClusterQueue{clusterQueue("big", "", group(covered, flavors...))}})
	if len(snap.resources) != maxCapacityEntries {
		t.Errorf("%d resources, want %d", len(snap.resources), maxCapacityEntries)
	}
	if last := snap.resources[len(snap.resources)-1]; last.Flavor != "flavor-3" || last.Resource != "vendor-03.example.com/accelerator" {
		t.Errorf("last resource %s/%s, want the first 64 by flavor then resource", last.Flavor, last.Resource)
	}
	if len(snap.summary) > maxSummaryLength || !strings.HasPrefix(snap.summary, "vendor-00.example.com/accelerator 0/4, ") {
		t.Errorf("summary %q (%d characters), want at most %d, by resource name", snap.summary, len(snap.summary), maxSummaryLength)
	}
}

func TestRemoteCapacity(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kueue.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cq := gpuQueue("team", "", "8")
	lq := localQueue("ml", "lq", "team")
	rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "a100"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&cq, &lq, rf).Build()

	without := NewRemote("w", c, c)
	if got := without.Capacity("ml", "lq"); got.Known {
		t.Errorf("Capacity() of a worker without the quota kinds = %+v, want unknown", got)
	}
	if _, summary := without.CapacitySummary(); !strings.HasPrefix(summary, "unknown: ") {
		t.Errorf("CapacitySummary() = %q, want it to say why the capacity is unknown", summary)
	}

	with := NewRemote("w", c, c, capacityKinds...)
	if diff := cmp.Diff(named("team", gpus(8, 0, 0, 0)), with.Capacity("ml", "lq")); diff != "" {
		t.Errorf("Capacity() mismatch (-want +got):\n%s", diff)
	}
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(&cq), &cq); err != nil {
		t.Fatal(err)
	}
	cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota = resource.MustParse("4")
	if err := c.Update(ctx, &cq); err != nil {
		t.Fatal(err)
	}
	resources, summary := with.CapacitySummary()
	if diff := cmp.Diff([]courier.ResourceCapacity{capacity("a100", gpu, "4", "0", "")}, resources, quantities); diff != "" {
		t.Errorf("CapacitySummary() resources mismatch (-want +got):\n%s", diff)
	}
	if summary != "nvidia.com/gpu 0/4" {
		t.Errorf("CapacitySummary() summary = %q, want %q", summary, "nvidia.com/gpu 0/4")
	}
}

func TestCapacitySnapshotIsReusedUntilStale(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kueue.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	tracker := newCapacityTracker(t.Context(), c, sets.New(capacityKinds...), "", true)
	first := tracker.current(capacityMaxAge)
	if first == nil {
		t.Fatal("no snapshot")
	}
	if again := tracker.current(capacityMaxAge); again != first {
		t.Error("recomputed without a change")
	}
	tracker.changes.Add(1)
	if fresh := tracker.current(capacityMaxAge); fresh != first {
		t.Error("recomputed within capacityMaxAge of the last computation")
	}
	if fresh := tracker.current(0); fresh == first {
		t.Error("not recomputed after a change, with no age allowed")
	}
}

// A workload's own waiting copy is not demand against itself: counted, a
// worker with exactly its room looked full to it, and it widened to
// another worker for nothing.
func TestCapacityOfOwnCopy(t *testing.T) {
	snap := computeCapacity(capacityObjects{
		ClusterQueues:   []kueue.ClusterQueue{gpuQueue("cq", "", "4"), gpuQueue("elsewhere", "", "4")},
		LocalQueues:     []kueue.LocalQueue{localQueue("ml", "lq", "cq"), localQueue("ml", "other", "elsewhere")},
		ResourceFlavors: sets.New("a100"),
		Workloads:       []kueue.Workload{waitingCopy("mine", "lq", 2), waitingCopy("theirs", "lq", 1)},
	})
	cases := map[string]struct {
		queue string
		own   types.UID
		want  placement.Capacity
	}{
		"every waiting copy, for no workload in particular": {queue: "lq", want: named("cq", gpus(4, 0, 0, 3))},
		"the others' copies, for a workload with a copy":    {queue: "lq", own: "uid-mine", want: named("cq", gpus(4, 0, 0, 1))},
		"every copy, for a workload with none there":        {queue: "lq", own: "uid-none", want: named("cq", gpus(4, 0, 0, 3))},
		"a copy in another queue takes nothing here":        {queue: "other", own: "uid-mine", want: named("elsewhere", gpus(4, 0, 0, 0))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, snap.capacity("ml", tc.queue, tc.own)); diff != "" {
				t.Errorf("capacity() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(named("cq", gpus(4, 0, 0, 3)), snap.capacity("ml", "lq", "")); diff != "" {
		t.Errorf("the shared snapshot changed (-want +got):\n%s", diff)
	}
}

func TestRoomGrew(t *testing.T) {
	reserved := func(gpus string) *kueue.ClusterQueue {
		cq := gpuQueue("cq", "", "8")
		cq.Status.FlavorsReservation = []kueue.FlavorUsage{used("a100", string(gpu), gpus)}
		return &cq
	}
	respecified := reserved("4")
	respecified.Generation = 2
	held := heldCopy("held", "cq")
	finished := *held.DeepCopy()
	finished.Status.Conditions = append(finished.Status.Conditions, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue})
	deleting := *held.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	waiting := waitingCopy("waiting", "lq", 1)
	respecifiedCopy := *held.DeepCopy()
	respecifiedCopy.Generation = 2
	cases := map[string]struct {
		old, cur any
		want     bool
	}{
		"reserved quota fell":             {old: reserved("4"), cur: reserved("3"), want: true},
		"reserved quota rose":             {old: reserved("3"), cur: reserved("4")},
		"reserved quota unchanged":        {old: reserved("4"), cur: reserved("4")},
		"a flavor's reservation gone":     {old: reserved("4"), cur: &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "cq"}}, want: true},
		"a quota object respecified":      {old: reserved("4"), cur: respecified, want: true},
		"a copy finished":                 {old: &held, cur: &finished, want: true},
		"a copy began to go":              {old: &held, cur: &deleting, want: true},
		"a copy admitted":                 {old: &waiting, cur: &held},
		"a waiting copy changed":          {old: &waiting, cur: &waiting},
		"a holding copy respecified only": {old: &held, cur: &respecifiedCopy},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := roomGrew(tc.old, tc.cur); got != tc.want {
				t.Errorf("roomGrew() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFreedOnDelete(t *testing.T) {
	held, waiting := heldCopy("held", "cq"), waitingCopy("waiting", "lq", 1)
	cq := gpuQueue("cq", "", "8")
	cases := map[string]struct {
		obj  any
		want bool
	}{
		"a copy that held quota":             {obj: &held, want: true},
		"a waiting copy":                     {obj: &waiting},
		"a copy whose last state is unknown": {obj: toolscache.DeletedFinalStateUnknown{Key: "ml/held", Obj: &held}, want: true},
		"a ClusterQueue":                     {obj: &cq},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := freedOnDelete(tc.obj); got != tc.want {
				t.Errorf("freedOnDelete() = %v, want %v", got, tc.want)
			}
		})
	}
}

// waitingReader lists as an informer cache that never syncs does: it
// waits for its caller's context.
type waitingReader struct{ client.Reader }

func (waitingReader) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	<-ctx.Done()
	return ctx.Err()
}

// A worker's connection closed before its informers synced ends the
// capacity read waiting on them: read with a context that never ends, it
// held its caller, the dispatcher's reconcile or the WorkerCluster
// controller, for good.
func TestCapacityReadEndsWithTheConnection(t *testing.T) {
	ctx, closeConnection := context.WithCancel(t.Context())
	tracker := newCapacityTracker(ctx, waitingReader{}, sets.New(capacityKinds...), "", true)
	closeConnection()
	read := make(chan *capacitySnapshot, 1)
	go func() { read <- tracker.current(capacityMaxAge) }()
	select {
	case snap := <-read:
		if snap != nil {
			t.Errorf("current() = %+v after the connection closed, want nil", snap)
		}
	case <-time.After(time.Minute):
		t.Fatal("current() still waiting a minute after the connection closed")
	}
}
