package soak

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/tools/localcluster"
)

// Outage is when a fault kept its target's API server from serving: from
// the pause or the kill until it resumed, or first answered again.
type Outage struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// For is how long the outage lasted.
func (o Outage) For() time.Duration { return o.To.Sub(o.From) }

// mustStayShort kinds stop an API server for less than workerLostTimeout
// on purpose: one that outlasts it is a different fault, one the fence
// does not promise to cover (its worker's control plane down while its
// pods run), and the fault fails rather than pass for a short one.
var mustStayShort = map[Kind]bool{PauseShort: true, APIServerKill: true, ManagerKill: true}

// checkShort fails a fault meant to be short whose outage was not.
func (in *injector) checkShort(f *Fault) error {
	if !mustStayShort[f.Kind] || f.Outage == nil || f.Outage.For() < in.lostTimeout {
		return nil
	}
	return fmt.Errorf("the API server of %s did not serve for %s, not less than workerLostTimeout %s: %s must end before Courier may count a worker lost",
		f.Target, f.Outage.For().Round(time.Second), in.lostTimeout, f.Kind)
}

// pauseAPIServer stops the API server of f's target with SIGSTOP for hold,
// continues it, and starts again the components that exited meanwhile.
func (in *injector) pauseAPIServer(ctx context.Context, f *Fault, hold time.Duration) (string, error) {
	dir, w := in.env.Dir, f.Target
	if err := localcluster.PauseAPIServer(dir, w); err != nil {
		return "", err
	}
	o := &Outage{From: time.Now()}
	f.Outage = o
	sleep(ctx, hold)
	err := localcluster.ResumeAPIServer(dir, w)
	o.To = time.Now()
	if err != nil {
		return "", err
	}
	// Components that lost their lease exit a moment after it.
	time.Sleep(settleComponents)
	rctx, cancel := restoreContext()
	defer cancel()
	note := fmt.Sprintf("paused for %s (workerLostTimeout %s)", o.For().Round(time.Second), in.lostTimeout)
	return note, localcluster.StartCluster(rctx, dir, in.env.Bin, w)
}

// killAPIServer kills the API server of f's target, has kwokctl start it
// again downFor later, and records the outage until it answers again.
func (in *injector) killAPIServer(ctx context.Context, f *Fault) (string, error) {
	dir, w := in.env.Dir, f.Target
	c := in.workers[w]
	if w == in.env.Manager {
		c = in.mgr
	}
	if err := localcluster.KillAPIServer(dir, w); err != nil {
		return "", err
	}
	o := &Outage{From: time.Now()}
	f.Outage = o
	rctx, cancel := restoreContext()
	defer cancel()
	back := make(chan time.Time, 1)
	go func() { back <- awaitServing(rctx, c) }()
	sleep(ctx, downFor)
	startErr := localcluster.StartCluster(rctx, dir, in.env.Bin, w)
	o.To = <-back
	if o.To.IsZero() {
		o.To = time.Now()
		return "", errors.Join(startErr, fmt.Errorf("waiting %s for the API server of %s to answer after its kill: %w", restoreFor, w, rctx.Err()))
	}
	return fmt.Sprintf("killed, restarted by kwokctl start, answering again after %s", o.For().Round(time.Second)), startErr
}

// serveEvery is how often a killed API server is asked whether it is back.
const serveEvery = 500 * time.Millisecond

// awaitServing returns when c's API server first answers a read, or the
// zero time if ctx ends first.
func awaitServing(ctx context.Context, c client.Client) time.Time {
	var at time.Time
	_ = wait.PollUntilContextCancel(ctx, serveEvery, false, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{}); err != nil {
			return false, nil
		}
		at = time.Now()
		return true, nil
	})
	return at
}

// fenceAfterBack bounds how long after its own API server is back a fence
// takes to stop the copies it could not stop while it was down: its next
// poll, the worker's Kueue evicting the deactivated Workloads, and the
// pods' stop, with room for a loaded machine.
const fenceAfterBack = time.Minute

// unpromisedBy returns the outage that puts an overlap outside what the
// Fenced policy promises, with what the report says of it: one of the
// workers that ran the job at once had its own API server down longer than
// workerLostTimeout, during the overlap or at most fenceAfterBack before
// it began, so that its fence could stop nothing there while Courier moved
// the job (docs/fence.md, "What it does not promise"): Courier may move it
// in the moments after the API server is back, before it has reconnected
// and before the fence has stopped the copy. It returns "" for any other
// overlap, and under any other policy.
func unpromisedBy(o Overlap, faults []*Fault, policy string, lostTimeout time.Duration) string {
	if policy != string(courier.LostWorkerFenced) {
		return ""
	}
	for _, f := range faults {
		out := f.Outage
		if out == nil || out.For() <= lostTimeout || !out.From.Before(o.To) || !o.From.Before(out.To.Add(fenceAfterBack)) {
			continue
		}
		for _, w := range o.Workers {
			if w != f.Target {
				continue
			}
			tail := "ended while it was down"
			switch {
			case !o.From.Before(out.To):
				tail = fmt.Sprintf("began %s after it was back, before its fence had stopped the copy there", o.From.Sub(out.To).Round(time.Millisecond))
			case o.To.After(out.To):
				tail = fmt.Sprintf("went on %s after it was back", o.To.Sub(out.To).Round(time.Millisecond))
			}
			return fmt.Sprintf("not promised under Fenced (docs/fence.md: the fence must reach its own API server): %s's API server did not serve for %s (%s–%s, %s at %s), longer than workerLostTimeout %s; the overlap %s",
				w, out.For().Round(time.Second), clock(out.From), clock(out.To), f.Kind, clock(f.Started), lostTimeout, tail)
		}
	}
	return ""
}
