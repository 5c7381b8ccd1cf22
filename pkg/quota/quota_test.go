package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestHeld(t *testing.T) {
	gpu := corev1.ResourceName("nvidia.com/gpu")
	cases := map[string]struct {
		adm  *kueue.Admission
		want Amounts
	}{
		"no admission": {want: Amounts{}},
		"summed over pod sets, by assigned flavor": {
			adm: &kueue.Admission{ClusterQueue: "cq", PodSetAssignments: []kueue.PodSetAssignment{
				{Name: "launcher", Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{corev1.ResourceCPU: "small"},
					ResourceUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				{Name: "node", Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{corev1.ResourceCPU: "small", gpu: "a100"},
					ResourceUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), gpu: resource.MustParse("4")}},
			}},
			want: Amounts{{"small", corev1.ResourceCPU}: 9000, {"a100", gpu}: 4000},
		},
		"a resource without a flavor, or with no usage, holds nothing": {
			adm: &kueue.Admission{ClusterQueue: "cq", PodSetAssignments: []kueue.PodSetAssignment{
				{Name: "sidecar", ResourceUsage: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
				{Name: "idle", Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{gpu: "a100"},
					ResourceUsage: corev1.ResourceList{gpu: resource.MustParse("0")}},
			}},
			want: Amounts{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Held(tc.adm)); diff != "" {
				t.Errorf("Held() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReservedAndOf(t *testing.T) {
	cq := kueuetesting.MakeClusterQueue("cq").Quota("a100", "nvidia.com/gpu", "8").Quota("small", corev1.ResourceCPU, "500m").
		Reserved("a100", "nvidia.com/gpu", "6").Obj()
	if diff := cmp.Diff(Amounts{{"a100", "nvidia.com/gpu"}: 6000}, Reserved(cq)); diff != "" {
		t.Errorf("Reserved() (-want +got):\n%s", diff)
	}
	cases := map[string]struct {
		fr          FlavorResource
		wantNominal string
		wantOK      bool
	}{
		"listed":                      {fr: FlavorResource{"small", corev1.ResourceCPU}, wantNominal: "500m", wantOK: true},
		"a flavor the queue lacks":    {fr: FlavorResource{"h100", "nvidia.com/gpu"}},
		"a resource the flavor lacks": {fr: FlavorResource{"a100", corev1.ResourceCPU}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q, ok := Of(cq, tc.fr)
			if ok != tc.wantOK {
				t.Fatalf("Of() found = %v, want %v", ok, tc.wantOK)
			}
			if ok && q.NominalQuota.Cmp(resource.MustParse(tc.wantNominal)) != 0 {
				t.Errorf("Of() nominal = %s, want %s", q.NominalQuota.String(), tc.wantNominal)
			}
		})
	}
}
