package act

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/pkg/dispatch/plan"
)

func TestMergeByReason(t *testing.T) {
	cases := map[string]struct {
		in, want []plan.Event
	}{
		"none": {},
		"distinct reasons stay apart, in order": {
			in:   []plan.Event{{Type: "Normal", Reason: "Forwarded", Message: "a."}, {Type: "Warning", Reason: "NotForwarded", Message: "b."}},
			want: []plan.Event{{Type: "Normal", Reason: "Forwarded", Message: "a."}, {Type: "Warning", Reason: "NotForwarded", Message: "b."}},
		},
		"one reason, one event: a series would keep only the first note": {
			in: []plan.Event{{Type: "Warning", Reason: "RemoteEdited", Message: "a."}, {Type: "Normal", Reason: "Forwarded", Message: "b."},
				{Type: "Warning", Reason: "RemoteEdited", Message: "c."}},
			want: []plan.Event{{Type: "Warning", Reason: "RemoteEdited", Message: "a. c."}, {Type: "Normal", Reason: "Forwarded", Message: "b."}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := gocmp.Diff(tc.want, mergeByReason(tc.in)); diff != "" {
				t.Errorf("mergeByReason() (-want +got):\n%s", diff)
			}
		})
	}
}
