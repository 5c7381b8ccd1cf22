package dispatch

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	courier "github.com/courierdev/courier/api/v1alpha1"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestWaitsForAdmission(t *testing.T) {
	cases := map[string]struct {
		wl   *kueuetesting.WorkloadWrapper
		want bool
	}{
		"nominated, its copies waiting":    {wl: kueuetesting.MakeWorkload("wl", "ns").Nominated("w1", "w3"), want: true},
		"nominated nowhere: no copy waits": {wl: kueuetesting.MakeWorkload("wl", "ns")},
		"placed already":                   {wl: kueuetesting.MakeWorkload("wl", "ns").Nominated("w1").Annotation(courier.PlacementAnnotation, `{"cluster":"w1"}`)},
		"dispatched already":               {wl: kueuetesting.MakeWorkload("wl", "ns").Nominated("w1").ClusterName("w1")},
		"being deleted":                    {wl: kueuetesting.MakeWorkload("wl", "ns").Nominated("w1").Deleting(time.Now())},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := waitsForAdmission(tc.wl.Obj()); got != tc.want {
				t.Errorf("waitsForAdmission() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFirst(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	w := func(ns, name string, since time.Duration) waiter {
		return waiter{key: types.NamespacedName{Namespace: ns, Name: name}, since: t0.Add(since)}
	}
	urgent := func(ns, name string, since time.Duration) waiter {
		u := w(ns, name, since)
		u.priority = 100
		return u
	}
	key := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	cases := map[string]struct {
		ws   []waiter
		n    int
		want []types.NamespacedName
	}{
		"none waits": {n: 4, want: []types.NamespacedName{}},
		"fewer than n: all, oldest first": {
			ws: []waiter{w("a", "young", time.Minute), w("a", "old", 0)}, n: 4,
			want: []types.NamespacedName{key("a", "old"), key("a", "young")},
		},
		"more than n: the n oldest": {
			ws: []waiter{w("a", "3", 3*time.Second), w("a", "1", time.Second), w("a", "4", 4*time.Second), w("a", "2", 2*time.Second)}, n: 2,
			want: []types.NamespacedName{key("a", "1"), key("a", "2")},
		},
		"higher priority first, however young": {
			ws: []waiter{w("a", "old", 0), urgent("a", "young", time.Minute), urgent("a", "younger", 2*time.Minute)}, n: 2,
			want: []types.NamespacedName{key("a", "young"), key("a", "younger")},
		},
		"ties by namespace, then name": {
			ws: []waiter{w("b", "x", 0), w("a", "y", 0), w("a", "x", 0)}, n: 3,
			want: []types.NamespacedName{key("a", "x"), key("a", "y"), key("b", "x")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, first(tc.ws, tc.n)); diff != "" {
				t.Errorf("first() (-want +got):\n%s", diff)
			}
		})
	}
}
