package placementdecision

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// WorkerClusterLabel on a PlacementDecision names the WorkerCluster its
// decision is for; absent while it has none.
const WorkerClusterLabel = "courier.dev/worker-cluster"

// Decision is the PlacementDecision a manager Workload's placement is
// published as. Its one decision names the worker's ClusterProfile; for a
// worker Courier reaches through a kubeconfig Secret (or whose
// WorkerCluster is gone: wc nil), the WorkerCluster's name stands in the
// reference, with no namespace. It has no decision when the placement is
// nil or of an earlier admission: the job waits to be placed again. It is
// pure, and owned by the Workload, which takes it along when deleted.
func Decision(wl *kueue.Workload, p *workload.Placement, wc *courier.WorkerCluster) *inventory.PlacementDecision {
	pd := &inventory.PlacementDecision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      wl.Name,
			Namespace: wl.Namespace,
			Labels:    map[string]string{inventory.PlacementKeyLabel: string(wl.UID)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: kueue.SchemeGroupVersion.String(), Kind: "Workload", Name: wl.Name, UID: wl.UID,
				// Without blockOwnerDeletion: setting it needs a permission
				// on the Workload's finalizers where that is enforced.
				Controller: ptr.To(true),
			}},
		},
		Decisions:     []inventory.ClusterDecision{},
		SchedulerName: courier.ControllerName,
	}
	if p == nil || p.Evictions != workload.Evictions(wl) {
		return pd
	}
	pd.Labels[WorkerClusterLabel] = p.Cluster
	decision := inventory.ClusterDecision{ClusterProfileRef: inventory.ClusterProfileReference{Name: p.Cluster}}
	switch {
	case wc != nil && wc.Spec.ClusterProfileRef != nil:
		ref := wc.Spec.ClusterProfileRef
		decision.ClusterProfileRef = inventory.ClusterProfileReference{Namespace: ref.Namespace, Name: ref.Name}
		decision.Reason = fmt.Sprintf("Placed by Courier on WorkerCluster %s, whose Kueue admitted the workload.", p.Cluster)
	default:
		decision.Reason = fmt.Sprintf("Placed by Courier on WorkerCluster %s, whose Kueue admitted the workload; Courier reaches it through a kubeconfig Secret, not a ClusterProfile, so the reference names the WorkerCluster.", p.Cluster)
	}
	pd.Decisions = append(pd.Decisions, decision)
	return pd
}
