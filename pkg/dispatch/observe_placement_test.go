package dispatch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func TestNominatedBefore(t *testing.T) {
	live := Remote{Workload: workloadCopy(remoteCopy())}
	cases := map[string]struct {
		nominated []string
		remotes   map[string]Remote
		want      []string
	}{
		"the Workload's nomination": {
			nominated: []string{"a"},
			remotes:   map[string]Remote{"a": live},
			want:      []string{"a"},
		},
		"a live copy the nomination does not name yet": {
			nominated: []string{"c"},
			remotes:   map[string]Remote{"b": live, "c": {}},
			want:      []string{"b", "c"},
		},
		"a copy being deleted": {
			remotes: map[string]Remote{"a": {Workload: workloadCopy(remoteCopy().Deleting(t0))}},
		},
		"a copy of an earlier Workload": {
			remotes: map[string]Remote{"a": {Workload: workloadCopy(remoteCopy()), Stale: true}},
		},
		"a cluster without a copy": {
			remotes: map[string]Remote{"a": {}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl := &kueue.Workload{Status: kueue.WorkloadStatus{NominatedClusterNames: tc.nominated}}
			if diff := cmp.Diff(tc.want, nominatedBefore(wl, tc.remotes)); diff != "" {
				t.Errorf("nominatedBefore (-want +got):\n%s", diff)
			}
		})
	}
}
