package e2e

import (
	"context"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// history records every version of one TrainJob on one cluster, from
// before it exists, so that a spec can check how it got to its state and
// not only the state.
type history struct {
	mu       sync.Mutex
	versions []*trainer.TrainJob
}

// watchTrainJob starts recording key on c until ctx ends.
func watchTrainJob(ctx context.Context, c cluster, key client.ObjectKey) *history {
	w, err := c.client.Watch(ctx, &trainer.TrainJobList{}, client.InNamespace(key.Namespace),
		client.MatchingFields{"metadata.name": key.Name})
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "watching TrainJob %s on %s", key, c.name)
	h := &history{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			tj, ok := ev.Object.(*trainer.TrainJob)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			h.mu.Lock()
			h.versions = append(h.versions, tj)
			h.mu.Unlock()
		}
	}()
	return h
}

// live returns the recorded versions before deletion began: deletion bumps
// the generation of an object with finalizers.
func (h *history) live() []*trainer.TrainJob {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*trainer.TrainJob
	for _, v := range h.versions {
		if v.DeletionTimestamp == nil {
			out = append(out, v)
		}
	}
	return out
}

// kueuePodSetPatches returns the replicated-job patches in the entry the
// worker's Kueue owns: empty until Kueue admits the job there.
func kueuePodSetPatches(tj *trainer.TrainJob) []trainer.ReplicatedJobPatch {
	for _, p := range tj.Spec.RuntimePatches {
		if p.Manager == "kueue.x-k8s.io/manager" && p.TrainingRuntimeSpec != nil &&
			p.TrainingRuntimeSpec.Template != nil && p.TrainingRuntimeSpec.Template.Spec != nil {
			return p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs
		}
	}
	return nil
}
