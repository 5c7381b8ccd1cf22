package localcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestDeliveries(t *testing.T) {
	pod := func(uid types.UID, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: uid, ResourceVersion: rv}}
	}
	type delivery struct {
		UID, RV string
		D       Delivery
	}
	cases := map[string]struct {
		event func(h toolscache.ResourceEventHandler)
		want  []delivery
	}{
		"an add": {
			event: func(h toolscache.ResourceEventHandler) { h.OnAdd(pod("a", "1"), false) },
			want:  []delivery{{"a", "1", Updated}},
		},
		"an update": {
			event: func(h toolscache.ResourceEventHandler) { h.OnUpdate(pod("a", "1"), pod("a", "2")) },
			want:  []delivery{{"a", "2", Updated}},
		},
		"a deletion": {
			event: func(h toolscache.ResourceEventHandler) { h.OnDelete(pod("a", "2")) },
			want:  []delivery{{"a", "2", Deleted}},
		},
		"a deletion found by a list": {
			event: func(h toolscache.ResourceEventHandler) {
				h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod("a", "2")})
			},
			want: []delivery{{"a", "2", DeletedUnwatched}},
		},
		// A copy deleted and made again while its worker's API server was
		// paused comes back from the list as an update of the old one.
		"an object of the same name made again while the watch was down": {
			event: func(h toolscache.ResourceEventHandler) { h.OnUpdate(pod("a", "2"), pod("b", "9")) },
			want:  []delivery{{"a", "2", DeletedUnwatched}, {"b", "9", Updated}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []delivery
			tc.event(deliveries(func(obj client.Object, d Delivery) {
				got = append(got, delivery{string(obj.GetUID()), obj.GetResourceVersion(), d})
			}))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
		})
	}
}
