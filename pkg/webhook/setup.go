package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
)

// The paths Courier serves, named in config/webhook and the chart.
const (
	MutateJobPath              = "/mutate-job"
	ValidateTrainJobPath       = "/validate-trainjob"
	ValidateDispatchPolicyPath = "/validate-dispatchpolicy"
)

// Setup adds the webhook server to mgr when the Configuration enables it.
// Under Internal certificate management the server starts only once the
// rotator has written the certificate and injected its CA; until then the
// readiness probe fails, so that no Service routes to a server that cannot
// answer.
func Setup(mgr ctrl.Manager, cfg *configv1alpha1.Configuration, adapters []adapter.Adapter) error {
	w := cfg.Webhook
	if w == nil || w.Enable == nil || !*w.Enable {
		return nil
	}
	ready := make(chan struct{})
	switch w.CertManagement {
	case configv1alpha1.CertManagementInternal:
		if err := addCertRotator(mgr, cfg, ready); err != nil {
			return err
		}
	default:
		close(ready)
	}
	s := &starter{ready: ready, register: func() webhook.Server {
		server := mgr.GetWebhookServer()
		decoder := admission.NewDecoder(mgr.GetScheme())
		server.Register(MutateJobPath, &webhook.Admission{Handler: &jobDefaulter{
			reader: liveOnMiss{cached: mgr.GetClient(), live: mgr.GetAPIReader()}, adapters: adapters, managerNamespace: cfg.Namespace,
		}})
		server.Register(ValidateTrainJobPath, &webhook.Admission{Handler: &trainJobValidator{decoder: decoder}})
		server.Register(ValidateDispatchPolicyPath, &webhook.Admission{Handler: &policyValidator{decoder: decoder}})
		return server
	}}
	if err := mgr.Add(s); err != nil {
		return fmt.Errorf("adding the webhook starter: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook", s.check); err != nil {
		return fmt.Errorf("adding the webhook readiness check: %w", err)
	}
	return nil
}

// starter registers the handlers and adds the webhook server to the
// manager once the certificate is in place: the server reads it when it
// starts, and fails when it is missing.
type starter struct {
	ready    <-chan struct{}
	register func() webhook.Server
	server   atomic.Pointer[webhook.Server]
}

var _ manager.LeaderElectionRunnable = (*starter)(nil)

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica serves the webhooks.
func (s *starter) NeedLeaderElection() bool { return false }

func (s *starter) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-s.ready:
	}
	ctrl.Log.WithName("webhook").V(2).Info("Starting the webhook server")
	server := s.register()
	s.server.Store(&server)
	return nil
}

func (s *starter) check(req *http.Request) error {
	server := s.server.Load()
	if server == nil {
		return errors.New("the webhook certificate is not ready yet")
	}
	return healthz.Checker((*server).StartedChecker())(req)
}
