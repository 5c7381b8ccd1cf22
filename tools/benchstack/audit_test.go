package benchstack

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCountAudit(t *testing.T) {
	from := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	to := from.Add(time.Minute)
	const user = "system:serviceaccount:courier-system:courier"
	line := func(stage, verb, ua, username, resource, sub string, at time.Time) string {
		ref := ""
		if resource != "" {
			ref = `,"objectRef":{"resource":"` + resource + `","subresource":"` + sub + `"}`
		}
		return `{"kind":"Event","stage":"` + stage + `","verb":"` + verb + `","userAgent":"` + ua +
			`","user":{"username":"` + username + `"}` + ref + `,"requestReceivedTimestamp":"` + at.Format(time.RFC3339Nano) + `"}`
	}
	cases := map[string]struct {
		lines       []string
		want        auditCounts
		wantSkipped int
	}{
		"counts by program and call, completed requests in the window only": {
			lines: []string{
				line("ResponseComplete", "create", "courier/v0.0.0 (linux/amd64)", user, "trainjobs", "", from),
				line("ResponseComplete", "create", "courier/v0.0.0 (linux/amd64)", user, "trainjobs", "", from.Add(time.Second)),
				line("ResponseComplete", "update", "kueue-v0.19.1/v0.0.0", user, "workloads", "status", from.Add(2*time.Second)),
				line("ResponseStarted", "watch", "courier/v0.0.0", user, "trainjobs", "", from.Add(time.Second)),
				line("ResponseComplete", "get", "courier/v0.0.0", "admin", "trainjobs", "", from.Add(time.Second)),
				line("ResponseComplete", "get", "courier/v0.0.0", user, "trainjobs", "", from.Add(-time.Second)),
				line("ResponseComplete", "get", "courier/v0.0.0", user, "trainjobs", "", to),
				line("ResponseComplete", "get", "courier", user, "", "", from),
			},
			want: auditCounts{
				"courier":       {"create trainjobs": 2, "get -": 1},
				"kueue-v0.19.1": {"update workloads/status": 1},
			},
		},
		"a line cut short is skipped": {
			lines:       []string{`{"kind":"Event","stage":"Resp`},
			want:        auditCounts{},
			wantSkipped: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, skipped, err := countAudit(strings.NewReader(strings.Join(tc.lines, "\n")), user, from, to)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if skipped != tc.wantSkipped {
				t.Errorf("skipped %d lines, want %d", skipped, tc.wantSkipped)
			}
		})
	}
}

func TestWorkerRequests(t *testing.T) {
	cases := map[string]struct {
		byWorker map[string]auditCounts
		program  string
		jobs     int
		want     WorkerRequests
	}{
		"the dispatcher's program only, by kind of request": {
			byWorker: map[string]auditCounts{
				"w1": {"courier": {"create trainjobs": 4, "get trainjobs": 2, "watch trainjobs": 1}, "kueue-v0.19.1": {"watch workloads": 3}},
				"w2": {"courier": {"delete trainjobs": 2, "list workloads": 1, "get -": 4}},
			},
			program: "courier",
			jobs:    4,
			want: func() WorkerRequests {
				r := WorkerRequests{Total: 14, ForWorkloads: 8, Gets: 2, Writes: 6, Background: 6,
					ByCall:        map[string]uint64{"create trainjobs": 4, "get trainjobs": 2, "watch trainjobs": 1, "delete trainjobs": 2, "list workloads": 1, "get -": 4},
					ByWorker:      map[string]uint64{"w1": 7, "w2": 7},
					OtherPrograms: map[string]uint64{"kueue-v0.19.1": 3}}
				r.PerWorkload.Total, r.PerWorkload.ForWorkloads, r.PerWorkload.Gets, r.PerWorkload.Writes = 3.5, 2, 0.5, 1.5
				return r
			}(),
		},
		"a prefix takes the patched build's program too": {
			byWorker: map[string]auditCounts{"w1": {"kueue-v0.19.1-multikueue-qps1000": {"patch workloads": 2}}},
			program:  "kueue",
			jobs:     2,
			want: func() WorkerRequests {
				r := WorkerRequests{Total: 2, ForWorkloads: 2, Writes: 2,
					ByCall: map[string]uint64{"patch workloads": 2}, ByWorker: map[string]uint64{"w1": 2}}
				r.PerWorkload.Total, r.PerWorkload.ForWorkloads, r.PerWorkload.Writes = 1, 1, 1
				return r
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, workerRequests(tc.byWorker, tc.program, tc.jobs)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
