package fence

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFencePatch(t *testing.T) {
	cases := map[string]struct {
		now  time.Time
		want string
	}{
		"just spec.active and the annotation, in UTC": {
			now:  time.Date(2030, 1, 2, 4, 5, 6, 7, time.FixedZone("CET", 3600)),
			want: `{"metadata":{"annotations":{"courier.dev/fenced":"2030-01-02T03:05:06Z"}},"spec":{"active":false}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := fencePatch(tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("fencePatch (-want +got):\n%s", diff)
			}
		})
	}
}
