package webhook

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

func TestValidatePolicy(t *testing.T) {
	cases := map[string]struct {
		filter, score string
		// want holds, per error, its field and a part of its detail.
		want [][2]string
	}{
		"no CEL":         {},
		"valid CEL":      {filter: `cluster.name != "w3"`, score: `1.0`},
		"syntax error":   {filter: `cluster.name ==`, want: [][2]string{{"spec.filter", "Syntax error"}}},
		"wrong type":     {score: `"high"`, want: [][2]string{{"spec.score", "gives string, want int, uint or double"}}},
		"unknown name":   {filter: `nodes > 3`, want: [][2]string{{"spec.filter", "undeclared reference to 'nodes'"}}},
		"both are wrong": {filter: `1`, score: `true`, want: [][2]string{{"spec.filter", "gives int, want bool"}, {"spec.score", "gives bool"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			policy := &courier.DispatchPolicy{Spec: courier.DispatchPolicySpec{Filter: tc.filter, Score: tc.score}}
			var got [][2]string
			for i, err := range ValidatePolicy(policy) {
				part := ""
				if i < len(tc.want) && strings.Contains(err.Detail, tc.want[i][1]) {
					part = tc.want[i][1]
				} else {
					part = err.Detail
				}
				got = append(got, [2]string{err.Field, part})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidatePolicy() (-want +got):\n%s", diff)
			}
		})
	}
}
