package benchstack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/tools/localcluster"
)

// quietTimeout bounds the wait, before a phase, for the workers to delete
// what earlier phases left there; past it the phase runs with a warning.
const quietTimeout = 10 * time.Minute

// leftKinds are what a phase leaves on a worker until the worker's Kueue,
// Trainer, JobSet and garbage collector have removed it: Workload and job
// copies, and what runs their pods.
var leftKinds = []schema.GroupVersionKind{
	{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"},
	{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"},
	{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Version: "v1", Kind: "Pod"},
}

// leftCounts are, per worker, the objects of each kind left in the bench's
// namespace.
type leftCounts map[string]map[string]int

// String names what is left, worker by worker; "" when nothing is.
func (c leftCounts) String() string {
	var parts []string
	for _, w := range slices.Sorted(maps.Keys(c)) {
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(c[w])) {
			if n := c[w][k]; n > 0 {
				kinds = append(kinds, fmt.Sprintf("%d %ss", n, k))
			}
		}
		if len(kinds) > 0 {
			parts = append(parts, w+": "+strings.Join(kinds, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// awaitQuietWorkers waits until no worker holds anything of an earlier
// phase: a system that left its copies behind (MultiKueue deletes them at
// its client's rate) would otherwise make the next phase, another
// system's, share the API servers with their deletion. It returns what is
// still there at quietTimeout, for the phase's warnings.
func awaitQuietWorkers(ctx context.Context, env *localcluster.Env, logf func(string, ...any)) (string, error) {
	clients := map[string]client.Client{}
	for _, w := range env.Workers {
		c, err := env.Client(w)
		if err != nil {
			return "", err
		}
		clients[w] = c
	}
	left := ""
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, quietTimeout, true, func(ctx context.Context) (bool, error) {
		counts, err := countLeft(ctx, clients)
		if err != nil {
			return false, err
		}
		if left == "" && counts.String() != "" {
			logf("Waiting for the workers to delete what earlier phases left: %s", counts)
		}
		left = counts.String()
		return left == "", nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return left, nil // Timed out: the phase runs, with a warning.
	}
	return "", err
}

// countLeft lists, by metadata only, what each worker holds in the
// bench's namespace.
func countLeft(ctx context.Context, clients map[string]client.Client) (leftCounts, error) {
	out := leftCounts{}
	for w, c := range clients {
		out[w] = map[string]int{}
		for _, gvk := range leftKinds {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := c.List(ctx, list, client.InNamespace(localcluster.Namespace)); err != nil {
				return nil, fmt.Errorf("listing the %ss on %s: %w", gvk.Kind, w, err)
			}
			out[w][gvk.Kind] = len(list.Items)
		}
	}
	return out, nil
}
