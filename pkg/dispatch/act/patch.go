package act

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Courier's writes to a manager Workload are JSON merge patches of the
// fields it owns, built from those fields. client.MergeFrom would encode
// the whole Workload twice and diff the two, which cost more CPU than the
// request. The patches hold the same values: a merge patch replaces a list
// whole, which is what MergeFrom sends whenever one element changed, and
// the resourceVersion refuses the write if anyone wrote in between.

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
