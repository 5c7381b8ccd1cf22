package fleet

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	dto "github.com/prometheus/client_model/go"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

func formatSeconds(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) }

// execExtension tells the plugin its state folder, as the cluster's exec
// extension that Courier passes on in KUBERNETES_EXEC_INFO.
func execExtension(dir string) clientcmdv1.NamedExtension {
	raw, err := json.Marshal(map[string]string{"stateDir": dir})
	Expect(err).NotTo(HaveOccurred())
	return clientcmdv1.NamedExtension{Name: "client.authentication.k8s.io/exec", Extension: runtime.RawExtension{Raw: raw}}
}

// workerProvider is an access provider of the worker, named name, whose
// plugin keeps its state in dir.
func workerProvider(name, dir string) inventory.AccessProvider {
	cfg := worker.RestConfig(framework.AdminUser)
	return inventory.AccessProvider{Name: name, Cluster: clientcmdv1.Cluster{
		Server: cfg.Host, CertificateAuthorityData: cfg.CAData, Extensions: []clientcmdv1.NamedExtension{execExtension(dir)},
	}}
}

// createProfile creates a ClusterProfile whose status offers providers, as
// a cluster manager publishes it, and deletes it when the spec ends.
func createProfile(ctx context.Context, name string, providers ...inventory.AccessProvider) *inventory.ClusterProfile {
	GinkgoHelper()
	cp := &inventory.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: profileNamespace, Name: name,
			Labels: map[string]string{inventory.LabelClusterManagerKey: "test-inventory"}},
		Spec: inventory.ClusterProfileSpec{DisplayName: name, ClusterManager: inventory.ClusterManager{Name: "test-inventory"}},
	}
	Expect(env.Manager.Client.Create(ctx, cp)).To(Succeed())
	cp.Status.AccessProviders = providers
	Expect(env.Manager.Client.Status().Update(ctx, cp)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, cp))).To(Succeed())
	})
	return cp
}

// createWorkerCluster creates wc and, when the spec ends, deletes it and
// waits until it is gone: its drain releases what it holds.
func createWorkerCluster(ctx context.Context, wc *courierv1alpha1.WorkerCluster) {
	GinkgoHelper()
	Expect(env.Manager.Client.Create(ctx, wc)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, wc))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wc), &courierv1alpha1.WorkerCluster{}))
		}).WithTimeout(time.Minute).Should(BeTrue(), "WorkerCluster %s was not removed", wc.Name)
	})
}

// expectCondition waits until the WorkerCluster's condition has the status
// and reason, and returns the WorkerCluster.
func expectCondition(ctx context.Context, name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *courierv1alpha1.WorkerCluster {
	GinkgoHelper()
	return expectConditionSaying(ctx, name, typ, status, reason, nil, timeout)
}

// expectConditionSaying waits until the WorkerCluster's condition has the
// status and reason and its message matches, and returns the WorkerCluster.
// It waits for the message too because an earlier attempt may have failed
// otherwise for a while, such as a plugin run that timed out on a busy
// machine before the run whose failure the spec is about.
func expectConditionSaying(ctx context.Context, name, typ string, status metav1.ConditionStatus, reason string, msg types.GomegaMatcher, timeout time.Duration) *courierv1alpha1.WorkerCluster {
	GinkgoHelper()
	got := &courierv1alpha1.WorkerCluster{}
	Eventually(func(g Gomega) {
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
		cond := meta.FindStatusCondition(got.Status.Conditions, typ)
		g.Expect(cond).NotTo(BeNil(), "no %s condition", typ)
		g.Expect(cond.Status).To(Equal(status), "%s condition: %+v", typ, cond)
		g.Expect(cond.Reason).To(Equal(reason), "%s condition: %+v", typ, cond)
		if msg != nil {
			g.Expect(cond.Message).To(msg, "%s condition's message", typ)
		}
	}).WithTimeout(timeout).Should(Succeed())
	return got
}

func message(wc *courierv1alpha1.WorkerCluster, typ string) string {
	if c := meta.FindStatusCondition(wc.Status.Conditions, typ); c != nil {
		return c.Message
	}
	return ""
}

// eventReasons lists the reasons of the events recorded on a WorkerCluster.
func eventReasons(ctx context.Context, g Gomega, name string) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Manager.Client.List(ctx, list)).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "WorkerCluster" && e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// metricValue sums a gauge or counter's series of one worker, optionally of
// one more label's value.
func metricValue(g Gomega, name, cluster string, labels ...string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabel(m, "cluster", cluster) && (len(labels) < 2 || hasLabel(m, labels[0], labels[1])) {
				sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
