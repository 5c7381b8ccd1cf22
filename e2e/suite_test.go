// Package e2e is Courier's end-to-end suite. It runs against any manager
// and workers that have the real peers installed (Kueue on every cluster,
// Trainer and JobSet on the workers, Courier on the manager) and are set up
// for dispatch: namespace team-a with LocalQueue "lq" everywhere, Courier's
// AdmissionCheck "courier" on the manager's ClusterQueue, and a
// WorkerCluster per worker. `make test-e2e` builds such an environment on
// local kwokctl clusters; hack/e2e-kind.sh does it on kind.
//
// The suite reads, from the environment:
//
//	COURIER_E2E_MANAGER_KUBECONFIG  the manager's kubeconfig
//	COURIER_E2E_WORKERS             name=kubeconfig,... one per worker, named as its WorkerCluster
//	COURIER_E2E_STOP_WORKER         a command that stops a worker's API server; the worker's name is appended
//	COURIER_E2E_START_WORKER        a command that starts it again; it may return once the API server
//	                                answers: the suite waits for the nodes and webhooks itself
package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/test/integration/framework"
)

const (
	namespace = "team-a"
	queue     = "lq"
	checkName = "courier"
)

// cluster is one cluster of the environment.
type cluster struct {
	name   string
	client client.WithWatch
}

var (
	manager cluster
	workers []cluster
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Courier e2e suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(500 * time.Millisecond)
	manager = connect("manager", mustEnv("COURIER_E2E_MANAGER_KUBECONFIG"))
	for _, pair := range strings.Split(mustEnv("COURIER_E2E_WORKERS"), ",") {
		name, path, ok := strings.Cut(pair, "=")
		Expect(ok).To(BeTrue(), "COURIER_E2E_WORKERS takes name=kubeconfig pairs, got %q", pair)
		workers = append(workers, connect(name, path))
	}
	Expect(len(workers)).To(BeNumerically(">=", 2), "the suite needs two workers")
	// An environment just set up may not serve yet what its Deployments
	// report Available for.
	recordServing(ctx)
})

func mustEnv(name string) string {
	v := os.Getenv(name)
	ExpectWithOffset(1, v).NotTo(BeEmpty(), "%s is not set: run the suite with `make test-e2e` or hack/e2e-kind.sh", name)
	return v
}

func connect(name, kubeconfig string) cluster {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	// client-go's default of 5 requests a second would make submitting a
	// hundred jobs, and polling them, the slowest part of a spec.
	cfg.QPS, cfg.Burst = 50, 100
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: framework.Scheme})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return cluster{name: name, client: c}
}

// workerControl runs the stop or start command for a worker.
func workerControl(ctx context.Context, envVar, worker string) {
	fields := strings.Fields(mustEnv(envVar))
	cmd := exec.CommandContext(ctx, fields[0], append(fields[1:], worker)...)
	out, err := cmd.CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s %s: %s", envVar, worker, out)
}
