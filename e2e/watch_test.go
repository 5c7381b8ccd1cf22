package e2e

import (
	"context"
	"fmt"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// trainJobLog records every version of every TrainJob in a namespace of
// one cluster, and which of them were deleted, from before they exist.
type trainJobLog struct {
	mu       sync.Mutex
	versions map[string][]*trainer.TrainJob
	deleted  map[types.UID]bool
	// err is why the log stopped early; it is then incomplete.
	err error
}

// watchTrainJobs starts recording the TrainJobs of namespace on c until ctx
// ends. The API server ends a watch after a while: the log resumes it from
// the last resource version seen, so that it misses no version.
func watchTrainJobs(ctx context.Context, c cluster, namespace string) *trainJobLog {
	l := &trainJobLog{versions: map[string][]*trainer.TrainJob{}, deleted: map[types.UID]bool{}}
	w, err := c.client.Watch(ctx, &trainer.TrainJobList{}, client.InNamespace(namespace))
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "watching TrainJobs on %s", c.name)
	go func() {
		rv := ""
		for {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					l.stop(fmt.Errorf("watch on %s: %v", c.name, ev.Object))
					w.Stop()
					return
				}
				tj, ok := ev.Object.(*trainer.TrainJob)
				if !ok {
					continue
				}
				rv = tj.ResourceVersion
				l.mu.Lock()
				if ev.Type == watch.Deleted {
					l.deleted[tj.UID] = true
				} else {
					l.versions[tj.Name] = append(l.versions[tj.Name], tj)
				}
				l.mu.Unlock()
			}
			w.Stop()
			if ctx.Err() != nil {
				return
			}
			w, err = c.client.Watch(ctx, &trainer.TrainJobList{}, client.InNamespace(namespace),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				l.stop(fmt.Errorf("resuming the watch on %s at %q: %w", c.name, rv, err))
				return
			}
		}
	}()
	return l
}

func (l *trainJobLog) stop(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = err
}

// of returns the versions of the TrainJob name seen so far, and which of
// its incarnations (UIDs) were deleted.
func (l *trainJobLog) of(name string) ([]*trainer.TrainJob, map[types.UID]bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	versions := append([]*trainer.TrainJob(nil), l.versions[name]...)
	deleted := map[types.UID]bool{}
	for _, v := range versions {
		deleted[v.UID] = l.deleted[v.UID]
	}
	return versions, deleted, l.err
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
