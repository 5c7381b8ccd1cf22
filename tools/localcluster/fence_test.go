package localcluster

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLostWorkerSettings(t *testing.T) {
	// The repository's root, where the values file is.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		fenced bool
		want   []string
	}{
		"no fence: Timeout, with the values file's workerLostTimeout": {
			want: []string{"configuration.lostWorkerPolicy=Timeout"},
		},
		// (60s the API server may take to store a heartbeat + the fence's
		// 10s) * 1.01 + 10s to react + 10s to stop = 90.7s, up to 95s.
		"a fence on every worker: Fenced, with the least workerLostTimeout its timing allows": {
			fenced: true,
			want: []string{
				"configuration.lostWorkerPolicy=Fenced",
				"configuration.workerLostTimeout=1m35s",
				"configuration.fence.timeout=10s",
				"configuration.fence.heartbeatInterval=2s",
				"configuration.fence.stopGrace=10s",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, summary, err := lostWorkerSettings(root, tc.fenced)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("chart values (-want +got):\n%s", diff)
			}
			if summary == "" {
				t.Error("no summary for the log")
			}
		})
	}
}
