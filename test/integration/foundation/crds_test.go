package foundation

import (
	"context"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	jobsettesting "github.com/courierdev/courier/pkg/testing/jobset"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

var _ = Describe("The peers' CRDs", func() {
	for _, clusterIndex := range []int{0, 1, 2} {
		It("are served intact on every cluster", func(ctx context.Context) {
			c := env.Clusters()[clusterIndex]
			By("using cluster " + c.Name)
			ns, err := c.CreateNamespace(ctx, "crds")
			Expect(err).NotTo(HaveOccurred())

			tj := trainertesting.MakeTrainJob("tj", ns.Name).
				ManagedBy("kueue.x-k8s.io/multikueue").
				RuntimePatch("example.com/user", "team", "a").
				RuntimePatch("kueue.x-k8s.io/manager", "kueue", "yes").
				Obj()
			Expect(c.Client.Create(ctx, tj.DeepCopy())).To(Succeed())
			gotTJ := &trainer.TrainJob{}
			Expect(c.Client.Get(ctx, client.ObjectKeyFromObject(tj), gotTJ)).To(Succeed())
			Expect(gotTJ.Spec.RuntimePatches).To(HaveLen(2))
			Expect(gotTJ.Spec.Suspend).NotTo(BeNil(), "the CRD defaults spec.suspend")
			gotTJ.Spec.Suspend = nil
			Expect(cmp.Diff(tj.Spec, gotTJ.Spec)).To(BeEmpty())

			wl := kueuetesting.MakeWorkload("wl", ns.Name).Queue("lq").Count(3).Obj()
			Expect(c.Client.Create(ctx, wl.DeepCopy())).To(Succeed())
			gotWL := &kueue.Workload{}
			Expect(c.Client.Get(ctx, client.ObjectKeyFromObject(wl), gotWL)).To(Succeed())
			Expect(gotWL.Spec.QueueName).To(Equal(wl.Spec.QueueName))
			Expect(gotWL.Spec.PodSets).To(HaveLen(1))
			Expect(gotWL.Spec.PodSets[0].Count).To(Equal(int32(3)))
			Expect(cmp.Diff(wl.Spec.PodSets[0].Template.Spec.Containers, gotWL.Spec.PodSets[0].Template.Spec.Containers)).To(BeEmpty())

			js := jobsettesting.MakeJobSet("js", ns.Name).ReplicatedJob("workers", 2).Suspend(true).Obj()
			Expect(c.Client.Create(ctx, js.DeepCopy())).To(Succeed())
			gotJS := &jobset.JobSet{}
			Expect(c.Client.Get(ctx, client.ObjectKeyFromObject(js), gotJS)).To(Succeed())
			Expect(gotJS.Spec.ReplicatedJobs).To(HaveLen(1))
			Expect(gotJS.Spec.ReplicatedJobs[0].Name).To(Equal("workers"))
			Expect(gotJS.Spec.ReplicatedJobs[0].Replicas).To(Equal(int32(2)))
			Expect(gotJS.Spec.Suspend).To(HaveValue(BeTrue()))
		})
	}
})
