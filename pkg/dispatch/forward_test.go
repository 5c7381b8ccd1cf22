package dispatch

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

func TestMergeByReason(t *testing.T) {
	cases := map[string]struct {
		in, want []Event
	}{
		"none": {},
		"distinct reasons stay apart, in order": {
			in:   []Event{{Type: "Normal", Reason: "Forwarded", Message: "a."}, {Type: "Warning", Reason: "NotForwarded", Message: "b."}},
			want: []Event{{Type: "Normal", Reason: "Forwarded", Message: "a."}, {Type: "Warning", Reason: "NotForwarded", Message: "b."}},
		},
		"one reason, one event: a series would keep only the first note": {
			in: []Event{{Type: "Warning", Reason: "RemoteEdited", Message: "a."}, {Type: "Normal", Reason: "Forwarded", Message: "b."},
				{Type: "Warning", Reason: "RemoteEdited", Message: "c."}},
			want: []Event{{Type: "Warning", Reason: "RemoteEdited", Message: "a. c."}, {Type: "Normal", Reason: "Forwarded", Message: "b."}},
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
