package workercluster

import (
	"context"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
)

// changeLog records the objects a cache's OnRemoteChange was called for,
// and those it was called for while the cache did not count their worker
// as connected.
type changeLog struct {
	mu          sync.Mutex
	seen, early []string
}

func (l *changeLog) add(name string, connected bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, name)
	if !connected {
		l.early = append(l.early, name)
	}
}

func (l *changeLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

func (l *changeLog) outOfReach() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.early)
}

func (l *changeLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen, l.early = nil, nil
}

// runCache runs a cache of worker connections until the spec ends,
// connected to worker under name.
func runCache(workers *cluster.Cache, name string, worker *framework.Cluster) {
	GinkgoHelper()
	DeferCleanup(framework.Run(workers.Start))
	kubeconfig, err := worker.Kubeconfig(framework.AdminUser)
	Expect(err).NotTo(HaveOccurred())
	target, err := cluster.ParseKubeconfig(kubeconfig, nil)
	Expect(err).NotTo(HaveOccurred())
	workers.Connect(name, target)
}

// A pass a worker's change brings can act on the worker only if the worker
// counts as connected then. A worker that comes back holds the copies of
// jobs dispatched elsewhere while it was lost, and nothing but their
// informer's adds brings the passes that remove them.
var _ = Describe("A worker's changes", func() {
	It("reach the dispatcher once the worker counts as connected, starting with what it holds, and again after it comes back", func(ctx context.Context) {
		worker := env.Workers[1]
		ns, err := worker.CreateNamespace(ctx, "changes")
		Expect(err).NotTo(HaveOccurred())
		const origin, name = "changes-spec", "changes"
		held := kueuetesting.MakeWorkload("held", ns.Name).Obj()
		held.Labels = map[string]string{courierv1alpha1.OriginLabel: origin}
		Expect(worker.Client.Create(ctx, held)).To(Succeed())

		log := &changeLog{}
		var workers *cluster.Cache
		workers = cluster.NewCache(cluster.Options{
			Origin:       origin,
			Scheme:       framework.Scheme,
			Kinds:        []schema.GroupVersionKind{kueue.SchemeGroupVersion.WithKind("Workload")},
			HealthPeriod: 500 * time.Millisecond,
			OnRemoteChange: func(cluster string, _, obj client.Object, _ bool) {
				_, err := workers.Get(cluster)
				log.add(obj.GetName(), err == nil)
			},
		})
		runCache(workers, name, worker)

		Eventually(log.names).WithTimeout(30 * time.Second).Should(ContainElement(held.Name))
		Expect(log.outOfReach()).To(BeEmpty(), "changes delivered before the worker counted as connected")

		By("stopping the worker's API server until the cache counts the worker out of reach, then starting it again")
		Expect(worker.StopAPIServer()).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			if !worker.APIServerRunning() {
				Expect(worker.StartAPIServer(ctx)).To(Succeed())
			}
		})
		Eventually(func() error {
			_, err := workers.Get(name)
			return err
		}).WithTimeout(30 * time.Second).Should(MatchError(cluster.ErrNotConnected))
		log.reset()
		Expect(worker.StartAPIServer(ctx)).To(Succeed())

		Eventually(log.names).WithTimeout(time.Minute).Should(ContainElement(held.Name))
		Expect(log.outOfReach()).To(BeEmpty(), "changes delivered before the worker counted as connected again")
	})

	// Courier holds a job back while a job copy it created may run unseen:
	// until the worker's informer has read up to its create.
	It("says whether a worker's informer has read up to a write", func(ctx context.Context) {
		worker := env.Workers[1]
		ns, err := worker.CreateNamespace(ctx, "reached")
		Expect(err).NotTo(HaveOccurred())
		const origin, name = "reached-spec", "reached"
		gvk := kueue.SchemeGroupVersion.WithKind("Workload")
		workers := cluster.NewCache(cluster.Options{Origin: origin, Scheme: framework.Scheme, Kinds: []schema.GroupVersionKind{gvk}})
		runCache(workers, name, worker)
		var remote *cluster.Remote
		Eventually(func() (err error) {
			remote, err = workers.Get(name)
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())

		made := kueuetesting.MakeWorkload("made", ns.Name).Obj()
		made.Labels = map[string]string{courierv1alpha1.OriginLabel: origin}
		Expect(remote.Client.Create(ctx, made)).To(Succeed())
		Expect(remote.Reached(gvk, made.ResourceVersion+"0")).To(BeFalse(), "a version past every write so far")
		Eventually(func() bool { return remote.Reached(gvk, made.ResourceVersion) }).Should(BeTrue())
		Eventually(func() error { return remote.Client.Get(ctx, client.ObjectKeyFromObject(made), &kueue.Workload{}) }).Should(Succeed())
		Expect(remote.Reached(kueue.SchemeGroupVersion.WithKind("LocalQueue"), "1")).To(BeTrue(), "no informer of the kind: the caller falls back on time")
	})
})
