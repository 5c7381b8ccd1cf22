package act

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/plan"
)

// Courier's writes to a manager Workload are JSON merge patches of the
// fields it owns, built from those fields. client.MergeFrom would encode
// the whole Workload twice and diff the two, which cost more CPU than the
// request. The patches hold the same values: a merge patch replaces a list
// whole, which is what MergeFrom sends whenever one element changed, and
// the resourceVersion refuses the write if anyone wrote in between. A
// check kept Pending is the exception, a JSON patch (PendingPatch).

// guard is the metadata of a patch that applies only to this version.
type guard struct {
	ResourceVersion string             `json:"resourceVersion"`
	Annotations     map[string]*string `json:"annotations,omitempty"`
}

// workloadStatusPatch is Courier's part of a Workload's status. A nil
// ClusterName or NominatedClusterNames is JSON null: the field is removed.
type workloadStatusPatch struct {
	AdmissionChecks       []kueue.AdmissionCheckState `json:"admissionChecks,omitempty"`
	ClusterName           *string                     `json:"clusterName"`
	NominatedClusterNames []string                    `json:"nominatedClusterNames"`
	Conditions            []metav1.Condition          `json:"conditions,omitempty"`
}

// statusPatch is the merge patch that sets wl's cluster name and nominated
// workers as wl holds them, and, if asked, its admission checks and its
// conditions, on wl's resourceVersion.
func statusPatch(wl *kueue.Workload, checks, conditions bool) (client.Patch, error) {
	st := workloadStatusPatch{ClusterName: wl.Status.ClusterName}
	if len(wl.Status.NominatedClusterNames) > 0 {
		st.NominatedClusterNames = wl.Status.NominatedClusterNames
	}
	if checks {
		st.AdmissionChecks = wl.Status.AdmissionChecks
	}
	if conditions {
		st.Conditions = wl.Status.Conditions
	}
	return encodePatch(struct {
		Metadata guard               `json:"metadata"`
		Status   workloadStatusPatch `json:"status"`
	}{guard{ResourceVersion: wl.ResourceVersion}, st})
}

// placementPatch is the merge patch that sets the placement record, or
// removes it when record is nil, on a Workload's resourceVersion version.
func placementPatch(version string, record *string) (client.Patch, error) {
	return encodePatch(struct {
		Metadata guard `json:"metadata"`
	}{guard{ResourceVersion: version, Annotations: map[string]*string{courier.PlacementAnnotation: record}}})
}

func encodePatch(v any) (client.Patch, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding Workload patch: %w", err)
	}
	return client.RawPatch(types.MergePatchType, data), nil
}

// movesPatch replaces the moves recorded on a Workload, guarded by the
// version the plan was made on.
func movesPatch(version, moves string) (client.Patch, error) {
	return encodePatch(struct {
		Metadata guard `json:"metadata"`
	}{guard{ResourceVersion: version, Annotations: map[string]*string{courier.MovesAnnotation: &moves}}})
}

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// PendingPatch is the patch for a change that keeps the check Pending on a
// Workload not placed, with a new message and the workers nominated, if
// any. ok is false for any other change.
//
// It is a JSON patch guarded by the check itself, not by the Workload's
// resourceVersion: it applies while the check is where and as the plan
// saw it, Pending, whatever else changed. Kueue writes the Workload's
// conditions just as it reserves quota, when Courier nominates, and a
// version guard would refuse the nomination for a change it does not
// touch. Nothing in a Pending check lets Kueue admit, and a nomination
// made stale by an eviction in between is cleared by the next pass, which
// its own write brings. A nomination removed goes as a merge patch: the
// JSON patch's remove fails where Kueue removed it first.
func PendingPatch(wl *kueue.Workload, check kueue.AdmissionCheckReference, s *plan.StatusChange) (client.Patch, bool, error) {
	if s.State != kueue.CheckStatePending || s.Finished != nil || s.ClusterName != nil || wl.Status.ClusterName != nil ||
		(len(s.Nominated) == 0 && len(wl.Status.NominatedClusterNames) > 0) {
		return nil, false, nil
	}
	i := slices.IndexFunc(wl.Status.AdmissionChecks, func(c kueue.AdmissionCheckState) bool { return c.Name == check })
	if i < 0 || wl.Status.AdmissionChecks[i].State != kueue.CheckStatePending {
		return nil, false, nil
	}
	at := fmt.Sprintf("/status/admissionChecks/%d/", i)
	ops := []jsonPatchOp{
		{Op: "test", Path: at + "name", Value: check},
		{Op: "test", Path: at + "state", Value: kueue.CheckStatePending},
		{Op: "add", Path: at + "message", Value: s.Message},
	}
	if len(s.Nominated) > 0 {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/status/nominatedClusterNames", Value: s.Nominated})
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, false, fmt.Errorf("encoding Workload patch: %w", err)
	}
	return client.RawPatch(types.JSONPatchType, data), true, nil
}
