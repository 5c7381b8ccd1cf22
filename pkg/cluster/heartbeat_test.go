package cluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Courier tells a fence that answers from one that is gone by whether its
// Lease changes, by Courier's own clock: the fence's clock is never read.
func TestObserveFence(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	lease := func(version, fencing, manager string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{ResourceVersion: version,
			Annotations: map[string]string{courier.FencedOriginsAnnotation: fencing, courier.FenceManagerAnnotation: manager}}}
	}
	seen := FenceState{LastChange: t0, version: "7", Answering: true, Manager: "Reading"}
	cases := map[string]struct {
		was   FenceState
		lease *coordinationv1.Lease
		now   time.Time
		want  FenceState
	}{
		"no fence":          {was: seen, now: t0, want: FenceState{}},
		"first seen":        {lease: lease("7", "", "Reading"), now: t0, want: seen},
		"renewed":           {was: seen, lease: lease("9", "", "Reading"), now: t0.Add(time.Hour), want: FenceState{LastChange: t0.Add(time.Hour), version: "9", Answering: true, Manager: "Reading"}},
		"unchanged, lately": {was: seen, lease: lease("7", "", "Reading"), now: t0.Add(fenceAnswerWindow), want: seen},
		"unchanged for long": {was: seen, lease: lease("7", "", "Reading"), now: t0.Add(fenceAnswerWindow + time.Second),
			want: FenceState{LastChange: t0, version: "7", Manager: "Reading"}},
		"fencing origins, sorted": {was: seen, lease: lease("8", "b, a", "Unconfigured"), now: t0,
			want: FenceState{LastChange: t0, version: "8", Answering: true, Manager: "Unconfigured", Fencing: []string{"a", "b"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := observeFence(tc.was, tc.lease, tc.now)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(FenceState{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("observeFence() (-want +got):\n%s", diff)
			}
		})
	}
}
