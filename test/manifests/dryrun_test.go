package manifests

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/courierdev/courier/test/integration/framework"
)

// The dry-run needs the CRDs of every kind rendered: Courier's and its
// peers' (the framework installs those), and stubs of the prometheus-operator
// and cert-manager kinds, whose fields the render tests check instead.
const stubCRDs = "test/manifests/testdata/crds"

var env *framework.Environment

func TestDryRun(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Manifests dry-run suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = framework.Start(ctx, framework.Options{CRDDirs: []string{stubCRDs}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(env.Stop()).To(Succeed())
	})
}, NodeTimeout(framework.StartTimeout))

// dryRun server-side applies m with dryRun=All, after creating for real the
// namespaces its objects go in: the API server validates every object
// against its schema and admission, and stores nothing.
func dryRun(ctx context.Context, m manifest) {
	namespaces := map[string]bool{}
	var objs []*unstructured.Unstructured
	for _, obj := range m {
		if obj.GetKind() == "Namespace" {
			namespaces[obj.GetName()] = true
			continue
		}
		if ns := obj.GetNamespace(); ns != "" {
			namespaces[ns] = true
		}
		objs = append(objs, obj)
	}
	for ns := range namespaces {
		Expect(env.Manager.EnsureNamespace(ctx, ns)).To(Succeed())
	}
	Expect(framework.Apply(ctx, env.Manager.Client, objs, client.DryRunAll)).To(Succeed())
}

var _ = Describe("The rendered manifests", func() {
	root := func() string {
		root, err := framework.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		return root
	}

	for name, tc := range chartCases {
		It("pass a server-side dry-run: chart, "+name, func(ctx context.Context) {
			m, err := renderChart(root(), tc.release, tc.namespace, tc.args...)
			Expect(err).NotTo(HaveOccurred())
			dryRun(ctx, m)
		})
	}

	for name, tc := range kustomizeCases {
		It("pass a server-side dry-run: kustomize config/default, "+name, func(ctx context.Context) {
			m, err := buildDefaultWith(root(), GinkgoT().TempDir(), tc.edits...)
			Expect(err).NotTo(HaveOccurred())
			dryRun(ctx, m)
		})
	}

	It("pass a server-side dry-run: kustomize config/samples", func(ctx context.Context) {
		m, err := buildKustomization(root(), "config/samples")
		Expect(err).NotTo(HaveOccurred())
		dryRun(ctx, m)
	})

	It("pass a server-side dry-run: kustomize config/worker", func(ctx context.Context) {
		m, err := buildKustomization(root(), "config/worker")
		Expect(err).NotTo(HaveOccurred())
		dryRun(ctx, m)
	})

	It("pass a server-side dry-run: kustomize config/worker with-manager", func(ctx context.Context) {
		m, err := buildWorkerWithManager(root(), GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		dryRun(ctx, m)
	})

	for _, file := range []string{framework.WorkerRBAC, "config/worker/rbac-namespaced.yaml", "config/worker/fence.yaml", "config/worker/fence-manager-rbac.yaml"} {
		It("pass a server-side dry-run: "+file, func(ctx context.Context) {
			objs, err := framework.ReadManifests(root() + "/" + file)
			Expect(err).NotTo(HaveOccurred())
			dryRun(ctx, objs)
		})
	}
})
