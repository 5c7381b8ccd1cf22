package fence

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/fence"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
)

const (
	// timeout is the heartbeats' leaseDurationSeconds.
	timeout      = 3 * time.Second
	pollInterval = 200 * time.Millisecond
	// margin covers a poll, the patches and the test's own polling.
	margin = 3 * time.Second
	// renewEvery is how often a live heartbeat is renewed here.
	renewEvery = 300 * time.Millisecond
)

// scene is one fence's world on the worker: its namespace, a namespace of
// jobs, and the origin whose heartbeat a spec drives.
type scene struct {
	worker *framework.Cluster
	// ns is the fence's namespace, which holds the heartbeats.
	ns string
	// jobs is where the Workload copies are.
	jobs   string
	origin string
	// workerConfig is the fence's identity on the worker: the shipped
	// config/worker/fence.yaml, granted in ns.
	workerConfig *rest.Config
}

func newScene(ctx context.Context) *scene {
	worker := env.Workers[0]
	ns, err := worker.CreateNamespace(ctx, "fence")
	Expect(err).NotTo(HaveOccurred())
	jobs, err := worker.CreateNamespace(ctx, "jobs")
	Expect(err).NotTo(HaveOccurred())
	s := &scene{worker: worker, ns: ns.Name, jobs: jobs.Name, origin: "origin-" + strings.TrimPrefix(ns.Name, "fence-")}
	s.workerConfig = grantFence(ctx, worker, s.ns)
	return s
}

// grantFence applies the fence's shipped worker RBAC with its namespaced
// objects moved to ns, and returns a config that acts as its
// ServiceAccount there.
func grantFence(ctx context.Context, worker *framework.Cluster, ns string) *rest.Config {
	objs, err := framework.ReadManifests(filepath.Join(env.RepoRoot, "config/worker/fence.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var apply []*unstructured.Unstructured
	var account string
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ServiceAccount":
			account = obj.GetName()
			obj.SetNamespace(ns)
		case "Role":
			obj.SetNamespace(ns)
		case "RoleBinding":
			obj.SetNamespace(ns)
			rebind(obj, "", ns, "")
		case "ClusterRoleBinding":
			obj.SetName(obj.GetName() + "-" + ns)
			rebind(obj, "", ns, "")
		case "ClusterRole":
		default:
			continue
		}
		apply = append(apply, obj)
	}
	Expect(account).NotTo(BeEmpty(), "config/worker/fence.yaml has no ServiceAccount")
	Expect(framework.Apply(ctx, worker.Client, apply)).To(Succeed())
	cfg := rest.CopyConfig(worker.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + account}
	return cfg
}

// grantManager applies the shipped config/worker/fence-manager-rbac.yaml
// on the manager for WorkerCluster wc, as a platform engineer copies it
// per worker, and returns a config that acts as that identity.
func grantManager(ctx context.Context, wc string) *rest.Config {
	objs, err := framework.ReadManifests(filepath.Join(env.RepoRoot, "config/worker/fence-manager-rbac.yaml"))
	Expect(err).NotTo(HaveOccurred())
	name := "courier-fence-" + wc
	var apply []*unstructured.Unstructured
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ClusterRole":
			role := &rbacv1.ClusterRole{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, role)).To(Succeed())
			Expect(role.Rules).To(HaveLen(1))
			Expect(role.Rules[0].ResourceNames).To(Equal([]string{"worker-1"}))
			role.Name, role.Rules[0].ResourceNames = name, []string{wc}
			obj.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(role)
			Expect(err).NotTo(HaveOccurred())
		case "ClusterRoleBinding":
			obj.SetName(name)
			rebind(obj, name, "", name)
		default:
			continue
		}
		apply = append(apply, obj)
	}
	Expect(apply).To(HaveLen(2))
	Expect(framework.Apply(ctx, env.Manager.Client, apply)).To(Succeed())
	cfg := rest.CopyConfig(env.Manager.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:courier-system:" + name}
	return cfg
}

// rebind points a binding's ServiceAccount subject at another name or
// namespace, and its roleRef at another role; empty keeps each.
func rebind(obj *unstructured.Unstructured, subject, namespace, role string) {
	binding := &rbacv1.RoleBinding{}
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, binding)).To(Succeed())
	Expect(binding.Subjects).To(HaveLen(1))
	if subject != "" {
		binding.Subjects[0].Name = subject
	}
	if namespace != "" {
		binding.Subjects[0].Namespace = namespace
	}
	if role != "" {
		binding.RoleRef.Name = role
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(binding)
	Expect(err).NotTo(HaveOccurred())
	kind := obj.GetKind()
	obj.Object = u
	obj.SetKind(kind)
}

// startFence runs a fence on the scene's worker, reading WorkerCluster wc
// through manager when manager is not nil, until the spec ends.
func (s *scene) startFence(manager *rest.Config, wc string) {
	f, err := fence.New(s.workerConfig, manager, fence.Options{
		Namespace: s.ns, PollInterval: pollInterval, Identity: "fence-" + s.ns, WorkerCluster: wc,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(framework.Run(f.Start))
}

// createHeartbeat creates origin's heartbeat Lease, as Courier does.
func (s *scene) createHeartbeat(ctx context.Context, origin string) {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: courier.HeartbeatLeasePrefix + origin, Namespace: s.ns},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(origin),
			LeaseDurationSeconds: ptr.To(int32(timeout / time.Second)),
			RenewTime:            ptr.To(metav1.NowMicro()),
		},
	}
	Expect(s.worker.Client.Create(ctx, lease)).To(Succeed())
}

// renew renews origin's heartbeat every renewEvery, as Courier does, until
// the returned function is called.
func (s *scene) renew(origin string) (stop func()) {
	key := client.ObjectKey{Namespace: s.ns, Name: courier.HeartbeatLeasePrefix + origin}
	stop = framework.Run(func(ctx context.Context) error {
		ticker := time.NewTicker(renewEvery)
		defer ticker.Stop()
		for {
			lease := &coordinationv1.Lease{}
			if err := s.worker.Client.Get(ctx, key, lease); err == nil {
				lease.Spec.RenewTime = ptr.To(metav1.NowMicro())
				_ = s.worker.Client.Update(ctx, lease)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-ticker.C:
			}
		}
	})
	DeferCleanup(stop)
	return stop
}

// workload creates a Workload copy in the jobs namespace with labels,
// admitted by the worker's Kueue, and returns its key.
func (s *scene) workload(ctx context.Context, name string, labels map[string]string) client.ObjectKey {
	w := kueuetesting.MakeWorkload(name, s.jobs)
	for k, v := range labels {
		w.Label(k, v)
	}
	wl := w.Obj()
	Expect(s.worker.Client.Create(ctx, wl)).To(Succeed())
	wl.Status = kueuetesting.MakeWorkload(name, s.jobs).ReserveQuota("cq").Admit(time.Now()).Obj().Status
	Expect(s.worker.Client.Status().Update(ctx, wl)).To(Succeed())
	return client.ObjectKeyFromObject(wl)
}

// finish marks a Workload Finished, as Kueue does when its job ends.
func (s *scene) finish(ctx context.Context, key client.ObjectKey) {
	wl := &kueue.Workload{}
	Expect(s.worker.Client.Get(ctx, key, wl)).To(Succeed())
	wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{
		Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "done", LastTransitionTime: metav1.Now(),
	})
	Expect(s.worker.Client.Status().Update(ctx, wl)).To(Succeed())
}

// mine are the labels of a copy of the scene's origin.
func (s *scene) mine() map[string]string {
	return map[string]string{courier.OriginLabel: s.origin}
}

// copyState is what the fence may change on a Workload.
type copyState struct {
	// Active is spec.active, which Kueue's CRD defaults to true.
	Active *bool
	// Fenced is whether it carries courier.dev/fenced with an RFC 3339 time.
	Fenced bool
}

var (
	untouched   = copyState{Active: ptr.To(true)}
	deactivated = copyState{Active: ptr.To(false), Fenced: true}
)

func (s *scene) state(ctx context.Context, key client.ObjectKey) func(Gomega) copyState {
	return func(g Gomega) copyState {
		wl := &kueue.Workload{}
		g.Expect(s.worker.Client.Get(ctx, key, wl)).To(Succeed())
		stamp, ok := wl.Annotations[courier.FencedAnnotation]
		if ok {
			_, err := time.Parse(time.RFC3339, stamp)
			g.Expect(err).NotTo(HaveOccurred(), "annotation %s", courier.FencedAnnotation)
		}
		return copyState{Active: wl.Spec.Active, Fenced: ok}
	}
}

// states reads several Workloads at once, in order.
func (s *scene) states(ctx context.Context, keys ...client.ObjectKey) func(Gomega) []copyState {
	return func(g Gomega) []copyState {
		var out []copyState
		for _, key := range keys {
			out = append(out, s.state(ctx, key)(g))
		}
		return out
	}
}

// fenceLease is what the fence publishes on its Lease.
type fenceLease struct {
	Holder, FencedOrigins, Manager string
}

func (s *scene) fenceLease(ctx context.Context) func(Gomega) fenceLease {
	return func(g Gomega) fenceLease {
		lease := &coordinationv1.Lease{}
		g.Expect(s.worker.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: courier.FenceLeaseName}, lease)).To(Succeed())
		fenced, ok := lease.Annotations[courier.FencedOriginsAnnotation]
		g.Expect(ok).To(BeTrue(), "annotation %s", courier.FencedOriginsAnnotation)
		return fenceLease{Holder: ptr.Deref(lease.Spec.HolderIdentity, ""), FencedOrigins: fenced, Manager: lease.Annotations[courier.FenceManagerAnnotation]}
	}
}

// fencedEvents counts the Fenced events the fence recorded on a Workload.
func (s *scene) fencedEvents(ctx context.Context, key client.ObjectKey) func(Gomega) int {
	return func(g Gomega) int {
		list := &eventsv1.EventList{}
		g.Expect(s.worker.Client.List(ctx, list, client.InNamespace(key.Namespace))).To(Succeed())
		n := 0
		for _, e := range list.Items {
			if e.Regarding.Kind == "Workload" && e.Regarding.Name == key.Name && e.Reason == fence.ReasonFenced && e.ReportingController == "courier-fence" {
				n++
			}
		}
		return n
	}
}

// workerCluster creates a WorkerCluster on the manager for the fence to
// read.
func workerCluster(ctx context.Context, name string) *courier.WorkerCluster {
	wc := couriertesting.MakeWorkerCluster(name).Obj()
	Expect(env.Manager.Client.Create(ctx, wc)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, wc))).To(Succeed())
	})
	return wc
}

// revoke sets the WorkerCluster's status.revokedSince, as Courier does
// when it gives up on the worker.
func revoke(ctx context.Context, name string) {
	wc := &courier.WorkerCluster{}
	Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, wc)).To(Succeed())
	wc.Status.RevokedSince = ptr.To(metav1.Now())
	Expect(env.Manager.Client.Status().Update(ctx, wc)).To(Succeed())
}
