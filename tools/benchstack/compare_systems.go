package benchstack

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/tools/localcluster"
)

// System is one dispatcher the comparison runs the loads through.
type System struct {
	// Name is short, for flags and file names; Label is what the output
	// calls it.
	Name, Label string
	// Check is the AdmissionCheck the manager's ClusterQueue points at.
	Check string
	// Kueue is the manager Kueue binary, relative to the bin folder.
	Kueue string
	// KueueClientQPS is the QPS and burst of the manager Kueue's client of
	// the manager (its Configuration's clientConnection); 0 keeps
	// v0.19.1's default, 300 QPS and burst 500.
	KueueClientQPS int32
	// Process is the dispatcher's recorded process, and Program the
	// start of its user agent on the workers.
	Process, Program string
	// Note qualifies the dispatcher's cost.
	Note string
	// Courier is the Courier binary, relative to the bin folder, that the
	// manager's Courier runs in this system's phases; "" leaves whichever
	// runs, idle.
	Courier string
}

// courier reports whether Courier dispatches for sys.
func (sys System) courier() bool { return sys.Process == localcluster.CourierProcess }

// The systems, in the order they run under each load.
const (
	SystemCourier = "courier"
	// SystemBaseline is Courier as built into BaselineCourier, another
	// build to compare with in the same run: the code before a change.
	SystemBaseline      = "baseline"
	SystemMultiKueue    = "multikueue"
	SystemMultiKueueQPS = "multikueue-qps"
	// SystemMultiKueueAllQPS is PatchedKueue with its client of the
	// manager at 1,000 QPS too: v0.19.1 as kueue#15206's default and
	// kueue#15280's gate on would run it.
	SystemMultiKueueAllQPS = "multikueue-all-qps"
	// SystemFloor is no dispatcher (compare_floor.go): what the manager
	// side costs for a job whatever dispatches it.
	SystemFloor = "floor"
	// SystemFree is the floor with each job run on a worker, with no
	// dispatcher process (compare_free.go): what the stack does with a
	// dispatcher that costs nothing of its own.
	SystemFree = "free"
)

// PatchedKueue is the binary tools/hack/build-kueue-multikueue-qps.sh
// builds: Kueue v0.19.1 whose MultiKueue clients of the workers run at
// 1,000 QPS and burst 1,000, where v0.19.1 leaves them at client-go's 5
// and 10 per resource. Its own client of the manager keeps v0.19.1's
// clientConnection default, 300 QPS and burst 500; kueue#15206 raised that
// default to 1,000 after v0.19.1, and kueue#15280 let the worker clients
// take clientConnection's limits behind a feature gate. The harness
// reports Kueue's busiest second of requests to the manager, to show
// whether its 300 QPS bound anything.
const PatchedKueue = "kueue-v0.19.1-multikueue-qps1000"

// BaselineCourier is the binary SystemBaseline runs, built from the commit
// to compare with by tools/hack/build-courier-baseline.sh. It is named
// courier, in a folder of its own, because the manager's audit log tells
// programs by their user agent, which client-go takes from the binary's
// name.
const BaselineCourier = "baseline/courier"

// Systems lists every system by name.
var Systems = map[string]System{
	SystemCourier: {Name: SystemCourier, Label: "Courier (defaults, BestFit)", Check: localcluster.CheckName,
		Kueue: "kueue", Process: localcluster.CourierProcess, Program: "courier", Courier: "courier"},
	SystemBaseline: {Name: SystemBaseline, Label: "Courier, the baseline build (defaults, BestFit)", Check: localcluster.CheckName,
		Kueue: "kueue", Process: localcluster.CourierProcess, Program: "courier", Courier: BaselineCourier},
	SystemMultiKueue: {Name: SystemMultiKueue, Label: "MultiKueue v0.19.1", Check: localcluster.MultiKueueCheckName,
		Kueue: "kueue", Process: localcluster.KueueProcess, Program: "kueue",
		Note: "the whole manager Kueue process, which also admits the workloads"},
	SystemMultiKueueQPS: {Name: SystemMultiKueueQPS, Label: "MultiKueue v0.19.1 + worker clients at 1,000 QPS", Check: localcluster.MultiKueueCheckName,
		Kueue: PatchedKueue, Process: localcluster.KueueProcess, Program: "kueue",
		Note: "the whole manager Kueue process, which also admits the workloads"},
	SystemMultiKueueAllQPS: {Name: SystemMultiKueueAllQPS, Label: "MultiKueue v0.19.1 + worker and manager clients at 1,000 QPS", Check: localcluster.MultiKueueCheckName,
		Kueue: PatchedKueue, KueueClientQPS: 1000, Process: localcluster.KueueProcess, Program: "kueue",
		Note: "the whole manager Kueue process, which also admits the workloads"},
	SystemFloor: {Name: SystemFloor, Label: "No dispatcher (the floor)", Check: floorCheck, Kueue: "kueue", Program: floorProgram,
		Note: "no process: the harness sets the check Ready and the job Complete, two writes per job"},
	SystemFree: {Name: SystemFree, Label: "The harness as dispatcher, at no cost of its own (free)", Check: floorCheck, Kueue: "kueue", Program: floorProgram,
		Note: "no process: the harness copies each job to a worker by Courier's rules, sets the check Ready, mirrors the end and deletes the copy; two writes to the manager and three to a worker per job"},
}

// SystemOrder is the order the systems run in under each load.
var SystemOrder = []string{SystemCourier, SystemBaseline, SystemMultiKueue, SystemMultiKueueQPS, SystemMultiKueueAllQPS, SystemFloor, SystemFree}

// multiKueues are the MultiKueue builds, the systems Courier is judged
// against.
var multiKueues = []string{SystemMultiKueue, SystemMultiKueueQPS, SystemMultiKueueAllQPS}

// DefaultSystems are the systems a comparison runs unless told otherwise:
// the dispatchers, without the baseline, the floor and the free dispatcher.
var DefaultSystems = []string{SystemCourier, SystemMultiKueue, SystemMultiKueueQPS}

// runAs restarts the process called name with binary want, unless running
// says it runs want already.
func runAs(ctx context.Context, name, want string, running func() (string, error),
	restart func(context.Context, string) (*localcluster.Process, error), logf func(string, ...any)) error {
	got, err := running()
	if err != nil || got == want {
		return err
	}
	logf("Restarting %s as %s", name, want)
	if _, err := restart(ctx, want); err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	return nil
}

// useKueue restarts the manager's Kueue with the binary and client QPS sys
// needs, unless it runs them already.
func useKueue(ctx context.Context, env *localcluster.Env, sys System, logf func(string, ...any)) error {
	binary := filepath.Join(env.Bin, sys.Kueue)
	config, err := env.ManagerKueueConfig(sys.KueueClientQPS)
	if err != nil {
		return err
	}
	running, err := env.ManagerKueue()
	if err != nil {
		return err
	}
	if running.Args[0] == binary && running.ConfigFile() == config {
		return nil
	}
	logf("Restarting the manager's Kueue as %s, from %s", binary, config)
	if _, err := env.RunManagerKueue(ctx, binary, config); err != nil {
		return fmt.Errorf("restarting the manager's Kueue: %w", err)
	}
	return nil
}

// switchTo makes sys the dispatcher: the manager Kueue and Courier
// binaries it needs, restarted if others run, and the ClusterQueue pointed
// at its check, waiting until the ClusterQueue is Active again.
func switchTo(ctx context.Context, env *localcluster.Env, sys System, logf func(string, ...any)) error {
	if err := useKueue(ctx, env, sys, logf); err != nil {
		return err
	}
	if sys.Courier != "" {
		restart := func(ctx context.Context, binary string) (*localcluster.Process, error) {
			return env.RestartCourier(ctx, binary, logf)
		}
		if err := runAs(ctx, "Courier", filepath.Join(env.Bin, sys.Courier), env.CourierBinary, restart, logf); err != nil {
			return err
		}
	}
	if err := env.UseCheck(ctx, sys.Check); err != nil {
		return err
	}
	mgr, err := env.Client(env.Manager)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cq := &kueue.ClusterQueue{}
		if err := mgr.Get(ctx, client.ObjectKey{Name: localcluster.ClusterQueue}, cq); err != nil {
			return false, err
		}
		checks := cq.Spec.AdmissionChecksStrategy
		return checks != nil && len(checks.AdmissionChecks) == 1 && string(checks.AdmissionChecks[0].Name) == sys.Check &&
			meta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive) &&
			cq.Status.ReservingWorkloads == 0 && cq.Status.PendingWorkloads == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for ClusterQueue %s to be Active with check %s and empty: %w", localcluster.ClusterQueue, sys.Check, err)
	}
	return nil
}
