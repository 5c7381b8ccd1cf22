package fence

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestManagerState(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	const interval = time.Second
	cases := map[string]struct {
		configured bool
		readAt     time.Time
		lastErr    error
		now        time.Time
		want       ManagerState
	}{
		"no manager": {
			now:  at(time.Minute),
			want: ManagerUnconfigured,
		},
		"not read yet": {
			configured: true,
			now:        at(100 * time.Millisecond),
			want:       ManagerUnreachable,
		},
		"read a moment ago": {
			configured: true,
			readAt:     at(time.Second),
			now:        at(2 * time.Second),
			want:       ManagerReading,
		},
		"the last read failed": {
			configured: true,
			readAt:     at(time.Second),
			lastErr:    errors.New("connection refused"),
			now:        at(2 * time.Second),
			want:       ManagerUnreachable,
		},
		"a read hanging for longer than a request may": {
			configured: true,
			readAt:     at(time.Second),
			now:        at(time.Second + requestTimeout + interval + time.Millisecond),
			want:       ManagerUnreachable,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newManagerReader(nil, "worker-1", interval, start)
			if tc.configured {
				r = newManagerReader(fake.NewClientBuilder().Build(), "worker-1", interval, start)
			}
			r.view.ReadAt, r.lastErr = tc.readAt, tc.lastErr
			_, got, _ := r.snapshot(tc.now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}
