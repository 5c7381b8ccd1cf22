package benchscale

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/test/integration/framework"
)

// job is one TrainJob the driver submits.
type job struct {
	name  string
	nodes int32
}

// workload is the name Kueue's TrainJob integration gives the job's
// Workload in the integration tests' simulation.
func (j job) workload() string { return "trainjob-" + j.name }

// makeJobs names count jobs from index first on, with sizes drawn from rng
// so that one seed submits the same jobs.
func makeJobs(rng *rand.Rand, first, count int) []job {
	jobs := make([]job, count)
	for i := range jobs {
		jobs[i] = job{name: fmt.Sprintf("bench-%06d", first+i), nodes: 1 + rng.Int32N(4)}
	}
	return jobs
}

func workloadNames(jobs []job) []string {
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.workload()
	}
	return names
}

// driver plays the manager's Kueue: it creates TrainJobs and their
// Workloads with quota reserved and Courier's check Pending, as
// kueuesim.Submit does in the integration tests.
type driver struct {
	client      client.Client
	namespace   string
	check       kueue.AdmissionCheckReference
	concurrency int
	timeline    *timeline
}

// submit creates the job and its Workload, reserves quota, and records
// when that status update returned.
func (d *driver) submit(ctx context.Context, j job) error {
	tj := trainertesting.MakeTrainJob(j.name, d.namespace).ManagedBy(adapter.TrainJobManagedBy).Queue(localQueue).Obj()
	tj.Spec.Trainer.NumNodes = ptr.To(j.nodes)
	if err := d.client.Create(ctx, tj); err != nil {
		return fmt.Errorf("creating TrainJob %s: %w", j.name, err)
	}
	wl := kueuetesting.MakeWorkload(j.workload(), d.namespace).Queue(localQueue).Count(j.nodes).
		Owner(trainer.GroupVersion.String(), trainer.TrainJobKind, j.name, string(tj.UID)).Obj()
	if err := d.client.Create(ctx, wl); err != nil {
		return fmt.Errorf("creating Workload %s: %w", wl.Name, err)
	}
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		// The created object is current unless someone wrote it since.
		if !first {
			if err := d.client.Get(ctx, client.ObjectKeyFromObject(wl), wl); err != nil {
				return err
			}
		}
		first = false
		d.reserveQuota(wl)
		return d.client.Status().Update(ctx, wl)
	})
	if err != nil {
		return fmt.Errorf("reserving quota for Workload %s: %w", wl.Name, err)
	}
	d.timeline.reserved(wl.Name, time.Now())
	return nil
}

// reserveQuota admits the Workload into the ClusterQueue with Courier's
// check Pending, as kueuesim.ReserveQuotaIn does.
func (d *driver) reserveQuota(w *kueue.Workload) {
	reserved := kueuetesting.MakeWorkload(w.Name, w.Namespace).Count(w.Spec.PodSets[0].Count).ReserveQuota(clusterQueue).Obj()
	w.Status.Admission = reserved.Status.Admission
	meta.SetStatusCondition(&w.Status.Conditions, reserved.Status.Conditions[0])
	w.Status.AdmissionChecks = []kueue.AdmissionCheckState{{
		Name: d.check, State: kueue.CheckStatePending, LastTransitionTime: metav1.Now(),
	}}
}

// submitAll submits the jobs with at most d.concurrency in flight.
func (d *driver) submitAll(ctx context.Context, jobs []job) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(d.concurrency)
	for _, j := range jobs {
		g.Go(func() error { return d.submit(gctx, j) })
	}
	return g.Wait()
}

// submitAtRate starts one submission every 1/rate seconds, with at most
// d.concurrency in flight, and returns the rate it achieved: lower than
// asked when the API server cannot keep up.
func (d *driver) submitAtRate(ctx context.Context, jobs []job, rate float64) (float64, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(d.concurrency)
	ticker := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer ticker.Stop()
	start, last := time.Now(), time.Now()
	for i, j := range jobs {
		if i > 0 {
			select {
			case <-ticker.C:
			case <-gctx.Done():
				if err := g.Wait(); err != nil {
					return 0, err
				}
				return 0, ctx.Err()
			}
		}
		last = time.Now()
		g.Go(func() error { return d.submit(gctx, j) })
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	if len(jobs) < 2 {
		return rate, nil
	}
	return float64(len(jobs)-1) / last.Sub(start).Seconds(), nil
}

// watchManager records when Courier's check turns Ready on the manager's
// Workloads in namespace, through one informer, until ctx ends.
func watchManager(ctx context.Context, c *framework.Cluster, namespace string, check kueue.AdmissionCheckReference, tl *timeline) error {
	informers, err := cache.New(c.Config, cache.Options{
		Scheme:            framework.Scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("creating the manager's Workload informer: %w", err)
	}
	inf, err := informers.GetInformer(ctx, &kueue.Workload{})
	if err != nil {
		return fmt.Errorf("getting the manager's Workload informer: %w", err)
	}
	seen := func(obj any) {
		w, ok := obj.(*kueue.Workload)
		if !ok {
			return
		}
		for _, s := range w.Status.AdmissionChecks {
			if s.Name == check && s.State == kueue.CheckStateReady {
				tl.ready(w.Name, time.Now())
			}
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	}); err != nil {
		return fmt.Errorf("watching the manager's Workloads: %w", err)
	}
	return startInformers(ctx, informers, c.Name)
}

// startInformers runs a cache until ctx ends and waits for it to sync.
func startInformers(ctx context.Context, informers cache.Cache, cluster string) error {
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return fmt.Errorf("syncing informers of %s: %w", cluster, context.Cause(ctx))
	}
	return nil
}
