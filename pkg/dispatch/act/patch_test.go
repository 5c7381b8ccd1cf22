package act

import (
	"encoding/json"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

// Applied to the Workload as it was, each patch gives the Workload Courier
// wants, as the diff of the two (client.MergeFrom) would, and holds the
// resourceVersion it was planned on.
func TestWorkloadPatches(t *testing.T) {
	base := func() *kueuetesting.WorkloadWrapper {
		return kueuetesting.MakeWorkload("wl", "ns").UID("uid").ReserveQuota("cq").Check("courier", kueue.CheckStatePending, "Waiting.").Check("other", kueue.CheckStateReady, "")
	}
	cases := map[string]struct {
		before *kueue.Workload
		change func(*kueue.Workload)
		patch  func(*kueue.Workload) (client.Patch, error)
		// notSent are status fields the patch must leave out.
		notSent []string
	}{
		"nominates": {
			before: base().Obj(),
			change: func(wl *kueue.Workload) {
				wl.Status.NominatedClusterNames = []string{"a", "b"}
				wl.Status.AdmissionChecks[0].Message = "Nominated a, b."
			},
			patch: func(wl *kueue.Workload) (client.Patch, error) { return statusPatch(wl, true, false) },
		},
		"turns the check Ready on a cluster, the nominations cleared": {
			before: base().Nominated("a", "b").Obj(),
			change: func(wl *kueue.Workload) {
				wl.Status.NominatedClusterNames = nil
				wl.Status.ClusterName = ptr.To("a")
				wl.Status.AdmissionChecks[0].State = kueue.CheckStateReady
			},
			patch: func(wl *kueue.Workload) (client.Patch, error) { return statusPatch(wl, true, false) },
		},
		"finishes, the cluster kept, the checks left alone": {
			before: base().ClusterName("a").Obj(),
			change: func(wl *kueue.Workload) {
				wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded"})
			},
			patch:   func(wl *kueue.Workload) (client.Patch, error) { return statusPatch(wl, false, true) },
			notSent: []string{"admissionChecks"},
		},
		"clears the cluster": {
			before:  base().ClusterName("a").Obj(),
			change:  func(wl *kueue.Workload) { wl.Status.ClusterName = nil },
			patch:   func(wl *kueue.Workload) (client.Patch, error) { return statusPatch(wl, false, false) },
			notSent: []string{"admissionChecks", "conditions"},
		},
		"records the placement": {
			before: base().Annotation("team", "x").Obj(),
			change: func(wl *kueue.Workload) {
				wl.Annotations[courier.PlacementAnnotation] = `{"cluster":"a","evictions":0}`
			},
			patch: placementPatchOf,
		},
		"removes the placement record": {
			before: base().Annotation("team", "x").Annotation(courier.PlacementAnnotation, `{"cluster":"a","evictions":0}`).Obj(),
			change: func(wl *kueue.Workload) { delete(wl.Annotations, courier.PlacementAnnotation) },
			patch:  placementPatchOf,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.before.ResourceVersion = "7"
			want := tc.before.DeepCopy()
			tc.change(want)
			patch, err := tc.patch(want.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			data, err := patch.Data(nil)
			if err != nil {
				t.Fatal(err)
			}
			var sent struct {
				Metadata struct{ ResourceVersion string } `json:"metadata"`
				Status   map[string]any                   `json:"status"`
			}
			if err := json.Unmarshal(data, &sent); err != nil || sent.Metadata.ResourceVersion != "7" {
				t.Errorf("patch %s: want resourceVersion 7 (%v)", data, err)
			}
			for _, field := range tc.notSent {
				if _, ok := sent.Status[field]; ok {
					t.Errorf("patch %s: sends status.%s", data, field)
				}
			}
			got := &kueue.Workload{}
			if err := json.Unmarshal(applyMergePatch(t, tc.before, data), got); err != nil {
				t.Fatal(err)
			}
			// Through JSON, as the server stores it: times to the second.
			if err := json.Unmarshal(applyMergePatch(t, want, nil), want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("patched Workload (-want +got):\n%s\npatch: %s", diff, data)
			}
		})
	}
}

// placementPatchOf is placementPatch for the record wl holds.
func placementPatchOf(wl *kueue.Workload) (client.Patch, error) {
	var record *string
	if v, ok := wl.Annotations[courier.PlacementAnnotation]; ok {
		record = &v
	}
	return placementPatch(wl.ResourceVersion, record)
}

// applyMergePatch returns obj's JSON with patch applied, or as it is.
func applyMergePatch(t *testing.T, obj any, patch []byte) []byte {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if patch == nil {
		return data
	}
	patched, err := jsonpatch.MergePatch(data, patch)
	if err != nil {
		t.Fatalf("applying %s: %v", patch, err)
	}
	return patched
}

// A change that keeps the check Pending applies to the Workload as the plan
// read it and to any newer version whose check is still where and as it
// was, and to no other.
func TestPendingPatch(t *testing.T) {
	read := func() *kueuetesting.WorkloadWrapper {
		return kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq").Check("other", kueue.CheckStateReady, "").Check("courier", kueue.CheckStatePending, "")
	}
	podsReady := func(w *kueuetesting.WorkloadWrapper) *kueuetesting.WorkloadWrapper {
		return w.Condition(kueue.WorkloadPodsReady, metav1.ConditionFalse, "WaitForStart", time.Time{})
	}
	cases := map[string]struct {
		read   *kueue.Workload
		change plan.StatusChange
		// server is the Workload as the API server holds it when the
		// patch comes, the one read if nil.
		server *kueue.Workload
		want   *kueue.Workload
		// refused: the patch does not apply to server.
		refused bool
	}{
		"nominates": {
			read:   read().Obj(),
			change: plan.StatusChange{State: kueue.CheckStatePending, Message: "Waiting.", Nominated: []string{"a", "b"}},
			want:   read().Nominated("a", "b").Obj(),
		},
		"nominates over Kueue's newer write to a condition, which stays": {
			read:   read().Obj(),
			change: plan.StatusChange{State: kueue.CheckStatePending, Message: "Waiting.", Nominated: []string{"a"}},
			server: podsReady(read()).Obj(),
			want:   podsReady(read()).Nominated("a").Obj(),
		},
		"changes the message, the nomination kept": {
			read:   read().Nominated("a").Obj(),
			change: plan.StatusChange{State: kueue.CheckStatePending, Message: "No worker can take the workload now.", Nominated: []string{"a"}},
			want:   read().Nominated("a").Obj(),
		},
		"widens the nomination": {
			read:   read().Nominated("a").Obj(),
			change: plan.StatusChange{State: kueue.CheckStatePending, Message: "Waiting.", Nominated: []string{"a", "b"}},
			want:   read().Nominated("a", "b").Obj(),
		},
		"is refused where the check is no longer Pending": {
			read:    read().Obj(),
			change:  plan.StatusChange{State: kueue.CheckStatePending, Message: "Waiting.", Nominated: []string{"a"}},
			server:  kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq").Check("other", kueue.CheckStateReady, "").Check("courier", kueue.CheckStateRetry, "").Obj(),
			refused: true,
		},
		"is refused where the check moved in the list": {
			read:    read().Obj(),
			change:  plan.StatusChange{State: kueue.CheckStatePending, Message: "Waiting.", Nominated: []string{"a"}},
			server:  kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq").Check("courier", kueue.CheckStatePending, "").Obj(),
			refused: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			patch, ok, err := PendingPatch(tc.read, "courier", &tc.change)
			if err != nil || !ok {
				t.Fatalf("PendingPatch = %v, %v; want a patch", ok, err)
			}
			data, err := patch.Data(nil)
			if err != nil {
				t.Fatal(err)
			}
			if patch.Type() != types.JSONPatchType {
				t.Errorf("patch type %s, want %s", patch.Type(), types.JSONPatchType)
			}
			server := tc.server
			if server == nil {
				server = tc.read
			}
			decoded, err := jsonpatch.DecodePatch(data)
			if err != nil {
				t.Fatal(err)
			}
			patched, err := decoded.Apply(applyMergePatch(t, server, nil))
			if tc.refused {
				if err == nil {
					t.Errorf("patch %s applied to %s", data, applyMergePatch(t, server, nil))
				}
				return
			}
			if err != nil {
				t.Fatalf("applying %s: %v", data, err)
			}
			got := &kueue.Workload{}
			if err := json.Unmarshal(patched, got); err != nil {
				t.Fatal(err)
			}
			want := tc.want.DeepCopy()
			findCheck(want, "courier").Message = tc.change.Message
			if err := json.Unmarshal(applyMergePatch(t, want, nil), want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("patched Workload (-want +got):\n%s\npatch: %s", diff, data)
			}
		})
	}
}

// Any change but one that keeps the check Pending on a Workload not
// placed goes as a merge patch guarded by the resourceVersion.
func TestPendingPatchLeavesTheRestToTheVersionGuard(t *testing.T) {
	pending := func() *kueuetesting.WorkloadWrapper {
		return kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq").Check("courier", kueue.CheckStatePending, "")
	}
	keep := plan.StatusChange{State: kueue.CheckStatePending, Message: "Waiting.", Nominated: []string{"a"}}
	cases := map[string]struct {
		read   *kueue.Workload
		change plan.StatusChange
	}{
		"the check turns Ready": {
			read:   pending().Nominated("a").Obj(),
			change: plan.StatusChange{State: kueue.CheckStateReady, Message: "Dispatched.", ClusterName: ptr.To("a")},
		},
		"the check turns Retry": {
			read:   pending().Obj(),
			change: plan.StatusChange{State: kueue.CheckStateRetry, Message: "Requeueing."},
		},
		"the Workload finishes": {
			read: pending().Obj(),
			change: plan.StatusChange{State: kueue.CheckStatePending, Message: "Waiting.",
				Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded"}},
		},
		"the nomination is removed": {
			read:   pending().Nominated("a").Obj(),
			change: plan.StatusChange{State: kueue.CheckStatePending, Message: "No worker can take the workload now."},
		},
		"the Workload is placed": {
			read:   pending().ClusterName("a").Obj(),
			change: keep,
		},
		"the check read is not Pending": {
			read:   kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq").Check("courier", kueue.CheckStateReady, "").Obj(),
			change: keep,
		},
		"the check is not on the Workload": {
			read:   kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq").Check("other", kueue.CheckStatePending, "").Obj(),
			change: keep,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, ok, err := PendingPatch(tc.read, "courier", &tc.change); ok || err != nil {
				t.Errorf("PendingPatch = %v, %v; want no patch", ok, err)
			}
		})
	}
}
