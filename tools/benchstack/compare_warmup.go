package benchstack

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/tools/localcluster"
)

// warmUpTimeout bounds the warm-up job's run.
const warmUpTimeout = 3 * time.Minute

// warmUp runs one TrainJob through the system before its phase is
// measured, and waits until it finished, its copy is gone and it is
// deleted: a dispatcher just restarted, or idle since its last phase,
// reaches the workers again before the clock starts, whatever its
// connection's state reads.
func warmUp(ctx context.Context, env *localcluster.Env, sys System, mgr client.Client) error {
	run := rand.String(5)
	prefix := fmt.Sprintf("warm-%s-", run)
	names := []string{prefix + "0000"}
	t := newPhaseTracker(prefix, sys.Check)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := watchPhase(wctx, env, labels.SelectorFromSet(labels.Set{runLabel: run}), t, nil); err != nil {
		return err
	}
	if err := create(ctx, mgr, benchJob(names[0], run).Obj()); err != nil {
		return err
	}
	t.submitted(names[0], time.Now())
	res := &PhaseResult{}
	done := make(chan error)
	if err := awaitPhase(ctx, names, t, done, warmUpTimeout, res, func(string, ...any) {}); err != nil {
		return err
	}
	if finished, final, live := t.counts(names); finished != 1 || final != 1 || live != 0 {
		return fmt.Errorf("warming %s up: its one TrainJob did not run through (%v)", sys.Label, res.Warnings)
	}
	cancel()
	return drain(ctx, mgr, run, prefix)
}
