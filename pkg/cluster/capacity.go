package cluster

// A worker's capacity is computed from its own Kueue objects: ClusterQueues,
// LocalQueues, ResourceFlavors, and the Workload copies Courier sent there
// that wait. computeCapacity is pure; remote_capacity.go feeds it from the
// worker's informers. It approximates Kueue's accounting, on purpose:
//
//   - Cohorts are flat: a ClusterQueue borrows from the others with the same
//     spec.cohortName. Hierarchical cohorts (Cohort objects, their parents
//     and their own quota) are ignored, so a queue under a Cohort with quota
//     may get more than shown.
//   - Borrowable is, per flavor and resource, what the other queues of the
//     cohort can lend now: each min(lendingLimit, or nominal if unset,
//     nominal - usage), summed, floored at zero and capped by the queue's
//     borrowingLimit. A queue that borrows itself lends a negative amount,
//     as in Kueue's own available(): what it borrowed is gone from the pool.
//   - Usage is the largest of status.flavorsReservation,
//     status.flavorsUsage, and what Courier's copies that hold quota there
//     hold by their status.admission: quota is held from its reservation
//     on, while admission checks run, not only once admitted, and Kueue
//     writes a ClusterQueue's usage a second or more after it admits, so a
//     copy just admitted would otherwise be counted nowhere. In a queue
//     shared with other jobs, their admissions of that last second are
//     still missed.
//   - Pending is the demand of the waiting copies (no QuotaReserved, not
//     finished, not deactivated), per pod as Kubernetes counts requests
//     (containers summed, the largest init container if larger, sidecars
//     added, limits standing in for missing requests, the pod overhead;
//     "pods" one per pod), times the count, all of it attributed to the
//     first flavor of the ClusterQueue that lists each resource: Kueue may
//     pick a later flavor, and a resource no flavor lists is not counted.
//   - A ClusterQueue is offered to placement (Known) only when it may admit:
//     not stopped (nor its LocalQueue), and every flavor it names exists.
//     Only those lend to their cohort. Queues being deleted are left out of
//     everything, the summary included. Namespace selectors, admission
//     checks, topology, fair sharing and preemption are not modeled.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/placement"
	"github.com/courierdev/courier/pkg/quota"
)

// Bounds of the WorkerCluster status fields (see the API's validation).
const (
	maxCapacityEntries = 64
	maxSummaryLength   = 256
)

// capacityObjects are what a worker's capacity is computed from.
type capacityObjects struct {
	ClusterQueues   []kueue.ClusterQueue
	LocalQueues     []kueue.LocalQueue
	ResourceFlavors sets.Set[string]
	// Workloads are Courier's copies on the worker, waiting or not.
	Workloads []kueue.Workload
}

// capacitySnapshot is a worker's capacity at one moment. Its maps and
// slices are shared by every reader and never modified.
type capacitySnapshot struct {
	// localQueues maps the LocalQueues that may submit to their
	// ClusterQueue.
	localQueues map[types.NamespacedName]string
	// queues holds the ClusterQueues offered to placement.
	queues map[string]placement.Capacity
	// resources and summary are for the WorkerCluster status.
	resources []courier.ResourceCapacity
	summary   string
	// shown are the manager Workloads whose copies the snapshot saw, in
	// any state: their demand is counted (as pending or held) or gone.
	shown sets.Set[types.UID]
	// waiting is the pending demand of each waiting copy, by manager
	// Workload, so that a workload's own copy is not demand against itself.
	waiting map[types.UID]copyDemand
}

// copyDemand is one copy's demand in its ClusterQueue.
type copyDemand struct {
	clusterQueue string
	amounts      quota.Amounts
}

// capacity is what the ClusterQueue of a LocalQueue offers to the
// workload of manager Workload own ("" for none): its own waiting copy
// there is not pending demand against itself.
func (s *capacitySnapshot) capacity(namespace, localQueue string, own types.UID) placement.Capacity {
	cq, ok := s.localQueues[types.NamespacedName{Namespace: namespace, Name: localQueue}]
	if !ok {
		return placement.Capacity{}
	}
	c, ok := s.queues[cq]
	if !ok {
		return placement.Capacity{ClusterQueue: cq}
	}
	if d, ok := s.waiting[own]; ok && own != "" && d.clusterQueue == cq {
		return withoutPending(c, d.amounts)
	}
	return c
}

// withoutPending returns a copy of c with amounts taken off its pending
// demand.
func withoutPending(c placement.Capacity, amounts quota.Amounts) placement.Capacity {
	out := c
	out.Flavors = make([]placement.Flavor, len(c.Flavors))
	for i, f := range c.Flavors {
		out.Flavors[i] = placement.Flavor{Name: f.Name, Resources: maps.Clone(f.Resources)}
		for res, q := range f.Resources {
			if amount, ok := amounts[quota.FlavorResource{Flavor: f.Name, Resource: res}]; ok {
				q.Pending = max(q.Pending-amount, 0)
				out.Flavors[i].Resources[res] = q
			}
		}
	}
	return out
}

func computeCapacity(objs capacityObjects) *capacitySnapshot {
	snap := &capacitySnapshot{localQueues: map[types.NamespacedName]string{}, queues: map[string]placement.Capacity{}}
	for _, lq := range objs.LocalQueues {
		if lq.DeletionTimestamp == nil && !stopped(lq.Spec.StopPolicy) {
			snap.localQueues[types.NamespacedName{Namespace: lq.Namespace, Name: lq.Name}] = string(lq.Spec.ClusterQueue)
		}
	}
	cqs := make(map[string]*kueue.ClusterQueue, len(objs.ClusterQueues))
	for i := range objs.ClusterQueues {
		if cq := &objs.ClusterQueues[i]; cq.DeletionTimestamp == nil {
			cqs[cq.Name] = cq
		}
	}
	demand := copiesDemand(objs.Workloads, snap.localQueues, cqs)
	snap.shown, snap.waiting = demand.shown, demand.waiting
	usage := make(map[string]quota.Amounts, len(cqs))
	cohorts := map[kueue.CohortReference][]string{}
	offered := sets.New[string]()
	for name, cq := range cqs {
		usage[name] = queueUsage(cq, demand.held[name])
		if mayAdmit(cq, objs.ResourceFlavors) {
			offered.Insert(name)
			if cq.Spec.CohortName != "" {
				cohorts[cq.Spec.CohortName] = append(cohorts[cq.Spec.CohortName], name)
			}
		}
	}
	totals := map[quota.FlavorResource]*courier.ResourceCapacity{}
	for name, cq := range cqs {
		c := placement.Capacity{Known: offered.Has(name), ClusterQueue: name}
		index := map[string]int{}
		for _, rg := range cq.Spec.ResourceGroups {
			for _, f := range rg.Flavors {
				i, ok := index[string(f.Name)]
				if !ok {
					i = len(c.Flavors)
					index[string(f.Name)] = i
					c.Flavors = append(c.Flavors, placement.Flavor{Name: string(f.Name), Resources: map[corev1.ResourceName]placement.Quota{}})
				}
				for _, r := range f.Resources {
					fr := quota.FlavorResource{Flavor: string(f.Name), Resource: r.Name}
					q := placement.Quota{
						Nominal: r.NominalQuota.MilliValue(),
						Usage:   usage[name][fr],
						Pending: demand.pending[name][fr],
					}
					if c.Known && cq.Spec.CohortName != "" {
						q.Borrowable = borrowable(cqs, usage, cohorts[cq.Spec.CohortName], name, fr, r.BorrowingLimit)
					}
					c.Flavors[i].Resources[r.Name] = q
					addTotal(totals, fr, q)
				}
			}
		}
		if c.Known {
			snap.queues[name] = c
		}
	}
	snap.resources, snap.summary = summarize(totals, len(cqs))
	return snap
}

func stopped(p *kueue.StopPolicy) bool {
	return p != nil && *p != kueue.None
}

// mayAdmit reports whether Kueue could admit to the queue now: a stopped
// queue admits nothing, nor does one that names a missing flavor (Kueue
// keeps it inactive).
func mayAdmit(cq *kueue.ClusterQueue, flavors sets.Set[string]) bool {
	if stopped(cq.Spec.StopPolicy) {
		return false
	}
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			if !flavors.Has(string(f.Name)) {
				return false
			}
		}
	}
	return true
}

// queueUsage is the quota a ClusterQueue's workloads hold, per flavor and
// resource: what its status says, or what Courier's copies hold there if
// more (held, which queueUsage keeps).
func queueUsage(cq *kueue.ClusterQueue, held quota.Amounts) quota.Amounts {
	used := held
	if used == nil {
		used = quota.Amounts{}
	}
	for _, list := range [][]kueue.FlavorUsage{cq.Status.FlavorsReservation, cq.Status.FlavorsUsage} {
		for fr, total := range quota.Totals(list) {
			used[fr] = max(used[fr], total)
		}
	}
	return used
}

// borrowable is what the rest of the cohort can lend a queue now.
func borrowable(cqs map[string]*kueue.ClusterQueue, usage map[string]quota.Amounts, cohort []string, self string, fr quota.FlavorResource, limit *resource.Quantity) int64 {
	var pool int64
	for _, other := range cohort {
		if other == self {
			continue
		}
		q, ok := quota.Of(cqs[other], fr)
		if !ok {
			continue
		}
		nominal := q.NominalQuota.MilliValue()
		lendable := nominal
		if q.LendingLimit != nil {
			lendable = q.LendingLimit.MilliValue()
		}
		pool += min(lendable, nominal-usage[other][fr])
	}
	if limit != nil {
		pool = min(pool, limit.MilliValue())
	}
	return max(pool, 0)
}

// demand is what Courier's copies on a worker ask for and hold, per
// ClusterQueue, flavor and resource.
type demand struct {
	// pending is the demand of the waiting copies, in the first flavor of
	// their queue that lists each resource.
	pending map[string]quota.Amounts
	// held is the quota the copies Kueue reserved for hold, in the flavors
	// it assigned.
	held map[string]quota.Amounts
	// shown are the manager Workloads of every copy seen.
	shown sets.Set[types.UID]
	// waiting is each waiting copy's share of pending, by manager Workload.
	waiting map[types.UID]copyDemand
}

func copiesDemand(workloads []kueue.Workload, localQueues map[types.NamespacedName]string, cqs map[string]*kueue.ClusterQueue) demand {
	d := demand{
		pending: map[string]quota.Amounts{}, held: map[string]quota.Amounts{},
		shown: sets.New[types.UID](), waiting: map[types.UID]copyDemand{},
	}
	add := func(m map[string]quota.Amounts, cq string, fr quota.FlavorResource, amount int64) {
		if m[cq] == nil {
			m[cq] = quota.Amounts{}
		}
		m[cq][fr] += amount
	}
	for i := range workloads {
		wl := &workloads[i]
		if uid := wl.Annotations[courier.ManagerUIDAnnotation]; uid != "" {
			d.shown.Insert(types.UID(uid))
		}
		if holds(wl) {
			name := string(wl.Status.Admission.ClusterQueue)
			for fr, amount := range quota.Held(wl.Status.Admission) {
				add(d.held, name, fr, amount)
			}
			continue
		}
		if !waiting(wl) {
			continue
		}
		name, ok := localQueues[types.NamespacedName{Namespace: wl.Namespace, Name: string(wl.Spec.QueueName)}]
		cq := cqs[name]
		if !ok || cq == nil {
			continue
		}
		own := copyDemand{clusterQueue: name, amounts: quota.Amounts{}}
		for res, amount := range workloadRequests(wl) {
			if flavor, ok := firstFlavor(cq, res); ok {
				add(d.pending, name, quota.FlavorResource{Flavor: flavor, Resource: res}, amount)
				own.amounts[quota.FlavorResource{Flavor: flavor, Resource: res}] += amount
			}
		}
		if uid := wl.Annotations[courier.ManagerUIDAnnotation]; uid != "" {
			d.waiting[types.UID(uid)] = own
		}
	}
	return d
}

// holds reports whether a copy holds quota on its worker: Kueue reserved
// it, and it has neither finished nor begun to go.
func holds(wl *kueue.Workload) bool {
	return wl.DeletionTimestamp == nil && wl.Status.Admission != nil &&
		meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) &&
		!meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished)
}

// waiting reports whether a copy waits for quota on its worker.
func waiting(wl *kueue.Workload) bool {
	return wl.DeletionTimestamp == nil && ptr.Deref(wl.Spec.Active, true) &&
		!meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) &&
		!meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished)
}

func firstFlavor(cq *kueue.ClusterQueue, res corev1.ResourceName) (string, bool) {
	for _, rg := range cq.Spec.ResourceGroups {
		if slices.Contains(rg.CoveredResources, res) && len(rg.Flavors) > 0 {
			return string(rg.Flavors[0].Name), true
		}
	}
	return "", false
}

// workloadRequests is a Workload's total demand in milli-units: every pod
// set's per-pod requests times its count.
func workloadRequests(wl *kueue.Workload) map[corev1.ResourceName]int64 {
	total := map[corev1.ResourceName]int64{}
	for _, ps := range wl.Spec.PodSets {
		for res, v := range placement.PodRequests(&ps.Template.Spec) {
			total[res] += v * int64(ps.Count)
		}
		total[corev1.ResourcePods] += 1000 * int64(ps.Count)
	}
	return total
}

// addTotal adds a queue's quota to the worker's totals. Borrowable is left
// out: summed over the queues of a worker it would count each lender's
// quota again, which the nominal total already holds.
func addTotal(totals map[quota.FlavorResource]*courier.ResourceCapacity, fr quota.FlavorResource, q placement.Quota) {
	t := totals[fr]
	if t == nil {
		t = &courier.ResourceCapacity{Flavor: fr.Flavor, Resource: string(fr.Resource)}
		totals[fr] = t
	}
	t.Nominal = placement.Quantity(fr.Resource, t.Nominal.MilliValue()+q.Nominal)
	t.Usage = placement.Quantity(fr.Resource, t.Usage.MilliValue()+q.Usage)
	if q.Pending != 0 {
		var before int64
		if t.Pending != nil {
			before = t.Pending.MilliValue()
		}
		t.Pending = ptr.To(placement.Quantity(fr.Resource, before+q.Pending))
	}
}

// summarize bounds the totals for the status and writes their one-line
// summary.
func summarize(totals map[quota.FlavorResource]*courier.ResourceCapacity, queues int) ([]courier.ResourceCapacity, string) {
	if queues == 0 {
		return nil, "no ClusterQueues"
	}
	resources := make([]courier.ResourceCapacity, 0, len(totals))
	used, nominal := map[corev1.ResourceName]int64{}, map[corev1.ResourceName]int64{}
	for fr, t := range totals {
		resources = append(resources, *t)
		used[fr.Resource] += t.Usage.MilliValue()
		nominal[fr.Resource] += t.Nominal.MilliValue()
	}
	slices.SortFunc(resources, func(a, b courier.ResourceCapacity) int {
		return cmp.Or(cmp.Compare(a.Flavor, b.Flavor), cmp.Compare(a.Resource, b.Resource))
	})
	if len(resources) > maxCapacityEntries {
		resources = resources[:maxCapacityEntries]
	}
	names := make([]corev1.ResourceName, 0, len(nominal))
	for res := range nominal {
		names = append(names, res)
	}
	slices.SortFunc(names, func(a, b corev1.ResourceName) int {
		return cmp.Or(cmp.Compare(relevance(a), relevance(b)), cmp.Compare(a, b))
	})
	var summary strings.Builder
	for _, res := range names {
		part := fmt.Sprintf("%s %s/%s", res, placement.Human(res, used[res]), placement.Human(res, nominal[res]))
		if summary.Len() > 0 {
			part = ", " + part
		}
		if summary.Len()+len(part) > maxSummaryLength {
			break
		}
		summary.WriteString(part)
	}
	if summary.Len() == 0 {
		return resources, "no quota"
	}
	return resources, summary.String()
}

// relevance orders resources by how much jobs care: accelerators and other
// extended resources, then cpu and memory, then the rest.
func relevance(res corev1.ResourceName) int {
	switch {
	case extended(res):
		return 0
	case res == corev1.ResourceCPU:
		return 1
	case res == corev1.ResourceMemory:
		return 2
	default:
		return 3
	}
}

func extended(res corev1.ResourceName) bool {
	s := string(res)
	return strings.Contains(s, "/") && !strings.HasPrefix(s, corev1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) && !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}
