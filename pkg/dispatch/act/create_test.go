package act

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A create a worker refused as it is passes the worker over with an
// event; anything else is retried (issue 14: MultiKueue retries refused
// creates for ever, in silence).
func TestIsRefused(t *testing.T) {
	trainJobs := schema.GroupResource{Group: "trainer.kubeflow.org", Resource: "trainjobs"}
	cases := map[string]struct {
		err  error
		want bool
	}{
		"a webhook's denial": {
			err:  apierrors.NewForbidden(trainJobs, "tj", errors.New(`admission webhook "validate.trainjob.trainer.kubeflow.org" denied the request`)),
			want: true,
		},
		"a ValidatingAdmissionPolicy's denial": {
			err: apierrors.NewInvalid(schema.GroupKind{Group: "kueue.x-k8s.io", Kind: "Workload"}, "wl",
				field.ErrorList{field.Invalid(field.NewPath("spec"), nil, "not allowed here")}),
			want: true,
		},
		"a bad request": {
			err:  apierrors.NewBadRequest("the object is malformed"),
			want: true,
		},
		"a kind whose CRD is being deleted": {
			err:  apierrors.NewMethodNotSupported(schema.GroupResource{Group: "example.com", Resource: "plainjobs"}, "create"),
			want: true,
		},
		"a same-name object": {
			err:  apierrors.NewAlreadyExists(trainJobs, "tj"),
			want: false,
		},
		"a missing namespace": {
			err:  apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team-a"),
			want: false,
		},
		"an overloaded worker": {
			err:  apierrors.NewTooManyRequests("slow down", 1),
			want: false,
		},
		"a network error": {
			err:  errors.New("connection refused"),
			want: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, isRefused(tc.err)); diff != "" {
				t.Errorf("isRefused() (-want +got):\n%s", diff)
			}
		})
	}
}

// A server error of the worker's own passes it over for a while: its
// Kueue may be back in a moment, and another worker may take the job
// meanwhile. Anything else is retried.
func TestIsWorkerFault(t *testing.T) {
	workloads := schema.GroupResource{Group: "kueue.x-k8s.io", Resource: "workloads"}
	cases := map[string]struct {
		err  error
		want bool
	}{
		"the worker's Kueue webhook unreachable": {
			err:  apierrors.NewInternalError(errors.New(`failed calling webhook "mworkload.kb.io": failed to call webhook: connection refused`)),
			want: true,
		},
		"the worker's API server unavailable": {
			err:  apierrors.NewServiceUnavailable("etcd is unavailable"),
			want: true,
		},
		"a refusal": {
			err: apierrors.NewForbidden(workloads, "wl", errors.New("denied")),
		},
		"an overloaded worker": {
			err: apierrors.NewTooManyRequests("slow down", 1),
		},
		"a network error": {
			err: errors.New("connection refused"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, isWorkerFault(tc.err)); diff != "" {
				t.Errorf("isWorkerFault() (-want +got):\n%s", diff)
			}
		})
	}
}
