package foundation

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/pkg/watchdecode"
	"github.com/courierdev/courier/test/integration/framework"
)

var _ = Describe("A cache without managed fields", func() {
	It("holds each object as the API server has it but for its managed fields, listed or watched, typed or unstructured", func(ctx context.Context) {
		c := env.Manager
		ns, err := c.CreateNamespace(ctx, "watchdecode")
		Expect(err).NotTo(HaveOccurred())
		listed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "listed", Namespace: ns.Name}, Data: map[string]string{"k": "v"}}
		Expect(c.Client.Create(ctx, listed)).To(Succeed())

		// As Courier's informers are configured: no client-wide timeout,
		// which would leave the watches to client-go.
		cfg := c.RestConfig(framework.AdminUser)
		cfg.Timeout = 0
		informers, err := watchdecode.NewCacheWithoutManagedFields(cfg, cache.Options{
			Scheme:            clientgoscheme.Scheme,
			DefaultNamespaces: map[string]cache.Config{ns.Name: {}},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(framework.Run(informers.Start))
		Expect(informers.WaitForCacheSync(ctx)).To(BeTrue())

		// Start both informers before the watched object exists, so that it
		// reaches them as watch events.
		typedKey := client.ObjectKeyFromObject(listed)
		Expect(informers.Get(ctx, typedKey, &corev1.ConfigMap{})).To(Succeed())
		Expect(informers.Get(ctx, typedKey, unstructuredConfigMap())).To(Succeed())
		watched := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched", Namespace: ns.Name}, Data: map[string]string{"k": "1"}}
		Expect(c.Client.Create(ctx, watched)).To(Succeed())
		watched.Data["k"] = "2"
		Expect(c.Client.Update(ctx, watched)).To(Succeed())

		for _, name := range []string{"listed", "watched"} {
			key := client.ObjectKey{Namespace: ns.Name, Name: name}
			want := &corev1.ConfigMap{}
			Expect(c.Client.Get(ctx, key, want)).To(Succeed())
			Expect(want.ManagedFields).NotTo(BeEmpty(), "the API server's %s has managed fields: the spec would test nothing", name)
			want.ManagedFields = nil
			wantUnstructured, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func(g Gomega) {
				got := &corev1.ConfigMap{}
				g.Expect(informers.Get(ctx, key, got)).To(Succeed())
				got.TypeMeta = want.TypeMeta
				g.Expect(got).To(Equal(want), "the typed cache's %s", name)
				gotUnstructured := unstructuredConfigMap()
				g.Expect(informers.Get(ctx, key, gotUnstructured)).To(Succeed())
				g.Expect(gotUnstructured.Object["metadata"]).To(Equal(wantUnstructured["metadata"]), "the unstructured cache's %s", name)
				g.Expect(gotUnstructured.Object["data"]).To(Equal(wantUnstructured["data"]), "the unstructured cache's %s", name)
			}).Should(Succeed())
		}
	})
})

var _ = Describe("A client whose writes return objects without managed fields", func() {
	It("gets each written object as the API server has it but for its managed fields, and reads untouched", func(ctx context.Context) {
		c := env.Manager
		ns, err := c.CreateNamespace(ctx, "responses")
		Expect(err).NotTo(HaveOccurred())
		cfg := c.RestConfig(framework.AdminUser)
		cfg.Wrap(watchdecode.ResponsesWithoutManagedFields)
		// In JSON, as custom resources (Workloads, jobs) always are; a
		// built-in kind would otherwise travel as protobuf, left alone.
		cfg.ContentType = runtime.ContentTypeJSON
		wrapped, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
		Expect(err).NotTo(HaveOccurred())

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written", Namespace: ns.Name}, Data: map[string]string{"k": "1"}}
		Expect(wrapped.Create(ctx, cm)).To(Succeed())
		Expect(cm.ManagedFields).To(BeEmpty(), "the created object as returned")
		patch := client.MergeFrom(cm.DeepCopy())
		cm.Data["k"] = "2"
		Expect(wrapped.Patch(ctx, cm, patch)).To(Succeed())
		Expect(cm.ManagedFields).To(BeEmpty(), "the patched object as returned")

		read := &corev1.ConfigMap{}
		Expect(wrapped.Get(ctx, client.ObjectKeyFromObject(cm), read)).To(Succeed())
		Expect(read.ManagedFields).NotTo(BeEmpty(), "a read keeps them")
		read.ManagedFields = nil
		Expect(cm).To(Equal(read), "the patched object as returned is the server's but for its managed fields")
	})
})

func unstructuredConfigMap() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	return u
}
