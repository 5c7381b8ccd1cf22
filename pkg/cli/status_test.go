package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestLocate(t *testing.T) {
	wl := func() *kueuetesting.WorkloadWrapper { return kueuetesting.MakeWorkload("w", "ns").ReserveQuota("cq") }
	cases := map[string]struct {
		wl   *kueue.Workload
		want Location
	}{
		"placed": {
			wl:   wl().Annotation(courier.PlacementAnnotation, `{"cluster":"w1","evictions":1}`).Evicted("Preempted", 1).ClusterName("w1").Obj(),
			want: Location{Cluster: "w1", Live: true, Summary: "Placed on w1."},
		},
		"placed before the last eviction": {
			wl: wl().Annotation(courier.PlacementAnnotation, `{"cluster":"w1","evictions":0}`).Evicted("Preempted", 1).Nominated("w2").Obj(),
			want: Location{Cluster: "w1", Nominated: []string{"w2"},
				Summary: "Was placed on w1 before its last eviction; its copies there go before it is dispatched again."},
		},
		"dispatched before placements were recorded": {
			wl:   wl().ClusterName("w1").Obj(),
			want: Location{Cluster: "w1", Live: true, Summary: "Placed on w1."},
		},
		"waiting with copies": {
			wl:   wl().Nominated("w1", "w2").Obj(),
			want: Location{Nominated: []string{"w1", "w2"}, Summary: "Waiting for a worker's Kueue to admit it; copies on w1, w2."},
		},
		"not sent yet": {
			wl:   wl().Obj(),
			want: Location{Summary: "Not sent to any worker yet."},
		},
		"a record Courier did not write": {
			wl:   wl().Annotation(courier.PlacementAnnotation, "w1").Obj(),
			want: Location{Summary: `The annotation courier.dev/placement="w1" is not a placement Courier wrote; Courier ignores it.`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, locate(tc.wl)); diff != "" {
				t.Errorf("location (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobState(t *testing.T) {
	cond := func(typ, status, reason, message, at string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": message, "lastTransitionTime": at}
	}
	cases := map[string]struct {
		conditions             []any
		wantState, wantMessage string
	}{
		"no status yet": {},
		"the latest true condition": {
			conditions: []any{
				cond("Suspended", "False", "Resumed", "", "2026-01-01T00:00:01Z"),
				cond("Created", "True", "JobSetCreated", "the JobSet is created", "2026-01-01T00:00:02Z"),
				cond("Complete", "True", "JobsCompleted", "done", "2026-01-01T00:00:03Z"),
			},
			wantState: "Complete", wantMessage: "JobsCompleted: done",
		},
		"a running job: resumed": {
			conditions: []any{cond("Suspended", "False", "Resumed", "TrainJob is resumed", "2026-01-01T00:00:01Z")},
			wantState:  "not Suspended", wantMessage: "Resumed: TrainJob is resumed",
		},
		"a true condition wins a tie": {
			conditions: []any{
				cond("Complete", "True", "JobsCompleted", "done", "2026-01-01T00:00:03Z"),
				cond("Suspended", "False", "Resumed", "", "2026-01-01T00:00:03Z"),
			},
			wantState: "Complete", wantMessage: "JobsCompleted: done",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := &unstructured.Unstructured{Object: map[string]any{}}
			if tc.conditions != nil {
				job.Object["status"] = map[string]any{"conditions": tc.conditions}
			}
			state, message := jobState(job)
			if diff := cmp.Diff([]string{tc.wantState, tc.wantMessage}, []string{state, message}); diff != "" {
				t.Errorf("jobState (-want +got):\n%s", diff)
			}
		})
	}
}
