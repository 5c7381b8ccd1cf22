package dispatch

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// A worker that refuses to delete a losing copy for good (an admission
// policy there) must not hold the dispatch in a loop of passes a second
// apart that never write the status: the check turns Ready, the refusal is
// reported, and the pass ends in an error, whose backoff grows. A delete
// refused only because Courier's view was out of date is retried soon,
// before anything is said.
func TestADeleteTheWorkerRefusesIsReportedAndTheDispatchGoesOn(t *testing.T) {
	workloads := schema.GroupResource{Group: kueue.SchemeGroupVersion.Group, Resource: "workloads"}
	cases := map[string]struct {
		refusal     error
		wantErr     bool
		wantRequeue bool
		wantCheck   kueue.CheckState
		wantEvent   bool
	}{
		"refused by a policy": {
			refusal: apierrors.NewInvalid(schema.GroupKind{Group: kueue.SchemeGroupVersion.Group, Kind: "Workload"}, "trainjob-tj",
				field.ErrorList{field.Forbidden(field.NewPath("metadata"), "ValidatingAdmissionPolicy 'keep' denied request")}),
			wantErr: true, wantCheck: kueue.CheckStateReady, wantEvent: true,
		},
		"refused for a conflict": {
			refusal:     apierrors.NewConflict(workloads, "trainjob-tj", errors.New("the object has been modified")),
			wantRequeue: true, wantCheck: kueue.CheckStatePending,
		},
		"a JSON patch whose test no longer holds": {
			refusal:     apierrors.NewGenericServerResponse(422, "", schema.GroupResource{}, "", "testing value /metadata/finalizers/0 failed: test failed", 0, false),
			wantRequeue: true, wantCheck: kueue.CheckStatePending,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl := managerWl().Nominated("w1", "w2").Check(check, kueue.CheckStatePending, "").Obj()
			manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, trainJob().Obj())...)
			w1 := fakeClient(interceptor.Funcs{}, workloadCopy(remoteCopy().Admit(t0)))
			refusing := interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
				return tc.refusal
			}}
			w2 := fakeClient(refusing, workloadCopy(remoteCopy()))
			r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)})

			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "trainjob-tj"}})
			if (err != nil) != tc.wantErr {
				t.Errorf("Reconcile() error = %v, want an error: %t", err, tc.wantErr)
			}
			if got := res.RequeueAfter == requeueSoon; got != tc.wantRequeue {
				t.Errorf("Reconcile() RequeueAfter = %s, want a requeue a second later: %t", res.RequeueAfter, tc.wantRequeue)
			}
			expectJobOn(t, w1, true)
			got := &kueue.Workload{}
			if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
				t.Fatal(err)
			}
			if state := findCheck(got, check).State; state != tc.wantCheck {
				t.Errorf("check = %s, want %s", state, tc.wantCheck)
			}
			refused := false
			for recorded := r.actor.Recorder.(*events.FakeRecorder).Events; len(recorded) > 0; {
				refused = refused || strings.Contains(<-recorded, " "+courier.EventDeleteRefused+" ")
			}
			if refused != tc.wantEvent {
				t.Errorf("DeleteRefused event recorded: %t, want %t", refused, tc.wantEvent)
			}
		})
	}
}
