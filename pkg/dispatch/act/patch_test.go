package act

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
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
