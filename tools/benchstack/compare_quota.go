package benchstack

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/tools/localcluster"
)

// unboundQuota is the nominal quota of every resource of every
// ClusterQueue during the comparison: far above any load, so that no quota
// binds and the time from quota reserved to the check Ready is the
// dispatcher's, not a queue's. The simulated nodes still bound the pods
// running at once; the kube-scheduler queues the rest.
const unboundQuota = "100000"

// unbindQuotas raises the quota of ClusterQueue "cq" on every cluster.
func unbindQuotas(ctx context.Context, env *localcluster.Env) error {
	for _, name := range append([]string{env.Manager}, env.Workers...) {
		c, err := env.Client(name)
		if err != nil {
			return err
		}
		cq := &kueue.ClusterQueue{}
		if err := c.Get(ctx, client.ObjectKey{Name: localcluster.ClusterQueue}, cq); err != nil {
			return fmt.Errorf("getting ClusterQueue %s on %s: %w", localcluster.ClusterQueue, name, err)
		}
		patch := client.MergeFrom(cq.DeepCopy())
		for g := range cq.Spec.ResourceGroups {
			for f := range cq.Spec.ResourceGroups[g].Flavors {
				for r, q := range cq.Spec.ResourceGroups[g].Flavors[f].Resources {
					n := resource.MustParse(unboundQuota)
					if q.Name == corev1.ResourceMemory {
						n = resource.MustParse(unboundQuota + "Gi")
					}
					cq.Spec.ResourceGroups[g].Flavors[f].Resources[r].NominalQuota = n
				}
			}
		}
		if err := c.Patch(ctx, cq, patch); err != nil {
			return fmt.Errorf("raising the quota of ClusterQueue %s on %s: %w", localcluster.ClusterQueue, name, err)
		}
	}
	return nil
}
