package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// MigrateReport is what kubectl courier migrate found of MultiKueue on the
// manager, and the Courier objects that do the same.
type MigrateReport struct {
	metav1.TypeMeta `json:",inline"`
	// WorkerClusters, DispatchPolicies and AdmissionChecks do with Courier
	// what the MultiKueueClusters, MultiKueueConfigs and MultiKueue
	// AdmissionChecks do.
	WorkerClusters   []courier.WorkerCluster  `json:"workerClusters"`
	DispatchPolicies []courier.DispatchPolicy `json:"dispatchPolicies"`
	AdmissionChecks  []kueue.AdmissionCheck   `json:"admissionChecks"`
	// Secrets are the kubeconfig Secrets the WorkerClusters name, to copy
	// from Kueue's namespace into Courier's.
	Secrets []SecretCopy `json:"secrets,omitempty"`
	// ClusterQueues are the ClusterQueues that run a MultiKueue check, to
	// move over to Courier's.
	ClusterQueues []QueueMove `json:"clusterQueues,omitempty"`
	// Notes say what could not be converted, and what to do instead.
	Notes []string `json:"notes,omitempty"`
	// Applied says what --apply did, one line per object.
	Applied []string `json:"applied,omitempty"`
}

// SecretCopy is a kubeconfig Secret of Kueue's that a WorkerCluster uses
// from Courier's namespace.
type SecretCopy struct {
	Name          string `json:"name"`
	FromNamespace string `json:"fromNamespace"`
	ToNamespace   string `json:"toNamespace"`
	// UsedBy are the MultiKueueClusters that name it.
	UsedBy []string `json:"usedBy"`
}

// QueueMove is a ClusterQueue running MultiKueue checks: the Courier check
// that replaces each, and the Workloads MultiKueue still runs for it.
type QueueMove struct {
	Name string `json:"name"`
	// Replace maps each MultiKueue check of the queue to its Courier check.
	Replace map[string]string `json:"replace"`
	// InFlight counts the queue's Workloads holding quota and not finished
	// with a MultiKueue check: MultiKueue runs them, and Courier must not.
	InFlight int `json:"inFlight"`
	// Patch is the kubectl command that swaps the checks.
	Patch string `json:"patch"`
}

// migrateOptions are kubectl courier migrate's flags.
type migrateOptions struct {
	kueueNamespace   string
	courierNamespace string
	strategy         courier.DispatchStrategy
	checkSuffix      string
	apply            bool
}

// multiKueueState is what migrate reads from the manager.
type multiKueueState struct {
	checks    []kueue.AdmissionCheck
	configs   []kueue.MultiKueueConfig
	clusters  []kueue.MultiKueueCluster
	queues    []kueue.ClusterQueue
	workloads []kueue.Workload
}

func gatherMultiKueue(ctx context.Context, c *clients) (*multiKueueState, error) {
	checks := &kueue.AdmissionCheckList{}
	configs := &kueue.MultiKueueConfigList{}
	clusters := &kueue.MultiKueueClusterList{}
	queues := &kueue.ClusterQueueList{}
	workloads := &kueue.WorkloadList{}
	for _, l := range []struct {
		list     client.ObjectList
		what     string
		optional bool
	}{
		{checks, "AdmissionChecks", false},
		// MultiKueue's CRDs may be gone already.
		{configs, "MultiKueueConfigs", true},
		{clusters, "MultiKueueClusters", true},
		{queues, "ClusterQueues", false},
		{workloads, "Workloads", false},
	} {
		err := c.manager.List(ctx, l.list)
		switch {
		case err == nil, l.optional && meta.IsNoMatchError(err):
		case apierrors.IsForbidden(err):
			return nil, fmt.Errorf("listing %s: %w; run kubectl courier migrate as a user who may list AdmissionChecks, MultiKueueConfigs, MultiKueueClusters, ClusterQueues and Workloads (and, with --apply, read and create Secrets in Kueue's and Courier's namespaces and apply Courier's objects)", l.what, err)
		default:
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	return &multiKueueState{checks: checks.Items, configs: configs.Items, clusters: clusters.Items, queues: queues.Items, workloads: workloads.Items}, nil
}

// convert is the Courier objects that do what MultiKueue does: per
// MultiKueue AdmissionCheck, a Courier AdmissionCheck (its name with
// checkSuffix) naming a DispatchPolicy of its MultiKueueConfig's name
// over its clusters; per MultiKueueCluster those use, a WorkerCluster of
// its name with its kubeconfig Secret or its ClusterProfile. It is pure.
func convert(s *multiKueueState, o migrateOptions) *MigrateReport {
	r := &MigrateReport{WorkerClusters: []courier.WorkerCluster{}, DispatchPolicies: []courier.DispatchPolicy{}, AdmissionChecks: []kueue.AdmissionCheck{}}
	configs := map[string]*kueue.MultiKueueConfig{}
	for i := range s.configs {
		configs[s.configs[i].Name] = &s.configs[i]
	}
	clusters := map[string]*kueue.MultiKueueCluster{}
	for i := range s.clusters {
		clusters[s.clusters[i].Name] = &s.clusters[i]
	}
	replace := map[string]string{}
	policies, workers := map[string]bool{}, map[string]bool{}
	for _, ac := range sortedChecks(s.checks) {
		if ac.Spec.ControllerName != kueue.MultiKueueControllerName {
			continue
		}
		p := ac.Spec.Parameters
		if p == nil || p.APIGroup != kueue.SchemeGroupVersion.Group || p.Kind != "MultiKueueConfig" {
			r.Notes = append(r.Notes, fmt.Sprintf("AdmissionCheck %s names no MultiKueueConfig in its parameters; nothing was converted for it.", ac.Name))
			continue
		}
		cfg, ok := configs[p.Name]
		if !ok {
			r.Notes = append(r.Notes, fmt.Sprintf("AdmissionCheck %s names MultiKueueConfig %s, which does not exist; nothing was converted for it.", ac.Name, p.Name))
			continue
		}
		name := ac.Name + o.checkSuffix
		replace[ac.Name] = name
		r.AdmissionChecks = append(r.AdmissionChecks, kueue.AdmissionCheck{
			TypeMeta:   metav1.TypeMeta{APIVersion: kueue.SchemeGroupVersion.String(), Kind: "AdmissionCheck"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kueue.AdmissionCheckSpec{ControllerName: courier.ControllerName, Parameters: &kueue.AdmissionCheckParametersReference{
				APIGroup: courier.GroupVersion.Group, Kind: "DispatchPolicy", Name: cfg.Name}},
		})
		if policies[cfg.Name] {
			continue
		}
		policies[cfg.Name] = true
		r.DispatchPolicies = append(r.DispatchPolicies, courier.DispatchPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: courier.GroupVersion.String(), Kind: "DispatchPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: cfg.Name},
			Spec:       courier.DispatchPolicySpec{Clusters: slices.Clone(cfg.Spec.Clusters), Strategy: o.strategy},
		})
		if q := cfg.Spec.QuotaManagement; q != nil && *q == kueue.QuotaManagementAutomated {
			r.Notes = append(r.Notes, fmt.Sprintf("MultiKueueConfig %s automates the manager's quota (quotaManagement: Automated); Courier does not: it reads each worker's quota to place jobs, and the manager's ClusterQueues keep the quota you give them.", cfg.Name))
		}
		for _, name := range cfg.Spec.Clusters {
			if workers[name] {
				continue
			}
			workers[name] = true
			mkc, ok := clusters[name]
			if !ok {
				r.Notes = append(r.Notes, fmt.Sprintf("MultiKueueConfig %s names MultiKueueCluster %s, which does not exist; DispatchPolicy %s names it all the same, and Courier uses it once a WorkerCluster of that name exists.", cfg.Name, name, cfg.Name))
				continue
			}
			if wc, note := workerCluster(mkc, o, r); wc != nil {
				r.WorkerClusters = append(r.WorkerClusters, *wc)
			} else {
				r.Notes = append(r.Notes, note)
			}
		}
	}
	r.ClusterQueues = queueMoves(s, replace)
	r.Notes = append(r.Notes, kindNotes(s, r.ClusterQueues)...)
	return r
}

func sortedChecks(checks []kueue.AdmissionCheck) []kueue.AdmissionCheck {
	sorted := slices.Clone(checks)
	slices.SortFunc(sorted, func(a, b kueue.AdmissionCheck) int { return strings.Compare(a.Name, b.Name) })
	return sorted
}

// workerCluster is the WorkerCluster of a MultiKueueCluster, or why there
// is none. A kubeconfig Secret is used from Courier's namespace, where it
// is recorded to be copied.
func workerCluster(mkc *kueue.MultiKueueCluster, o migrateOptions, r *MigrateReport) (*courier.WorkerCluster, string) {
	wc := &courier.WorkerCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: courier.GroupVersion.String(), Kind: "WorkerCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: mkc.Name, Labels: mkc.Labels},
	}
	switch src := mkc.Spec.ClusterSource; {
	case src.ClusterProfileRef != nil:
		wc.Spec.ClusterProfileRef = &courier.ClusterProfileReference{Namespace: o.kueueNamespace, Name: src.ClusterProfileRef.Name}
		r.Notes = append(r.Notes, fmt.Sprintf("WorkerCluster %s is reached through ClusterProfile %s/%s: list, under workerCredentials.plugins of Courier's Configuration, the access providers Kueue's Configuration lists under multiKueue.clusterProfile, each with its name and the plugin's absolute path in Courier's image.",
			mkc.Name, o.kueueNamespace, src.ClusterProfileRef.Name))
	case src.KubeConfig != nil && src.KubeConfig.LocationType == kueue.PathLocationType:
		return nil, fmt.Sprintf("MultiKueueCluster %s reads its kubeconfig from the file %s on Kueue's disk; Courier reads kubeconfigs from Secrets only: put it in a Secret in %s under key kubeconfig and create WorkerCluster %s naming it.",
			mkc.Name, src.KubeConfig.Location, o.courierNamespace, mkc.Name)
	case src.KubeConfig != nil:
		wc.Spec.Kubeconfig = &courier.KubeconfigSource{SecretRef: courier.SecretKeyReference{Name: src.KubeConfig.Location, Key: kueue.MultiKueueConfigSecretKey}}
		if o.kueueNamespace == o.courierNamespace {
			break
		}
		if i := slices.IndexFunc(r.Secrets, func(s SecretCopy) bool { return s.Name == src.KubeConfig.Location }); i >= 0 {
			r.Secrets[i].UsedBy = append(r.Secrets[i].UsedBy, mkc.Name)
		} else {
			r.Secrets = append(r.Secrets, SecretCopy{Name: src.KubeConfig.Location, FromNamespace: o.kueueNamespace, ToNamespace: o.courierNamespace, UsedBy: []string{mkc.Name}})
		}
	default:
		return nil, fmt.Sprintf("MultiKueueCluster %s has no cluster source; nothing was converted for it.", mkc.Name)
	}
	return wc, ""
}

// queueMoves lists the ClusterQueues that run a converted MultiKueue
// check, with the Workloads MultiKueue runs for them and the patch that
// swaps the checks.
func queueMoves(s *multiKueueState, replace map[string]string) []QueueMove {
	var moves []QueueMove
	for _, cq := range s.queues {
		if cq.Spec.AdmissionChecksStrategy == nil {
			continue
		}
		move := QueueMove{Name: cq.Name, Replace: map[string]string{}}
		var ops []string
		for i, rule := range cq.Spec.AdmissionChecksStrategy.AdmissionChecks {
			if to, ok := replace[string(rule.Name)]; ok {
				move.Replace[string(rule.Name)] = to
				ops = append(ops, fmt.Sprintf(`{"op":"replace","path":"/spec/admissionChecksStrategy/admissionChecks/%d/name","value":%q}`, i, to))
			}
		}
		if len(ops) == 0 {
			continue
		}
		for _, wl := range s.workloads {
			if inFlight(&wl, cq.Name, move.Replace) {
				move.InFlight++
			}
		}
		move.Patch = fmt.Sprintf("kubectl patch clusterqueue %s --type json -p '[%s]'", cq.Name, strings.Join(ops, ","))
		moves = append(moves, move)
	}
	sort.Slice(moves, func(i, j int) bool { return moves[i].Name < moves[j].Name })
	return moves
}

// inFlight: the Workload holds quota in the queue, is not finished, and
// carries a MultiKueue check, so MultiKueue may have sent it to a worker.
func inFlight(wl *kueue.Workload, queue string, mk map[string]string) bool {
	if wl.Status.Admission == nil || string(wl.Status.Admission.ClusterQueue) != queue ||
		meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
		return false
	}
	return slices.ContainsFunc(wl.Status.AdmissionChecks, func(c kueue.AdmissionCheckState) bool {
		_, ok := mk[string(c.Name)]
		return ok
	})
}

// kindNotes names the kinds of job, other than TrainJob, in the queues
// that move: Courier dispatches them only as externalFrameworks, and their
// managedBy, immutable, holds MultiKueue's value.
func kindNotes(s *multiKueueState, moves []QueueMove) []string {
	queues := map[string]bool{}
	for _, m := range moves {
		queues[m.Name] = true
	}
	kinds := map[string]bool{}
	for _, wl := range s.workloads {
		if wl.Status.Admission == nil || !queues[string(wl.Status.Admission.ClusterQueue)] {
			continue
		}
		for _, ref := range wl.OwnerReferences {
			gv, err := schema.ParseGroupVersion(ref.APIVersion)
			if err != nil || ref.Controller == nil || !*ref.Controller || (ref.Kind == "TrainJob" && gv.Group == "trainer.kubeflow.org") {
				continue
			}
			kinds[ref.Kind+"."+gv.Version+"."+gv.Group] = true
		}
	}
	var notes []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		notes = append(notes, fmt.Sprintf("Jobs of kind %s use these queues: list it under externalFrameworks in Courier's Configuration, with managedBy.value kueue.x-k8s.io/multikueue, which such jobs already carry and cannot change.", k))
	}
	return notes
}
