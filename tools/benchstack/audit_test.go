package benchstack

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// auditLine is one audit event as kube-apiserver writes it.
type auditLine struct {
	id, stage, verb, ua, user, group, resource, sub, ns, name, uri string
	code                                                           int
	received, at                                                   time.Time
}

func (l auditLine) String() string {
	ev := map[string]any{
		"kind": "Event", "auditID": l.id, "stage": l.stage, "verb": l.verb, "userAgent": l.ua, "requestURI": l.uri,
		"user": map[string]any{"username": l.user}, "requestReceivedTimestamp": l.received.Format(time.RFC3339Nano),
		"stageTimestamp": l.at.Format(time.RFC3339Nano),
	}
	if l.resource != "" {
		ev["objectRef"] = map[string]any{"resource": l.resource, "subresource": l.sub, "apiGroup": l.group, "namespace": l.ns, "name": l.name}
	}
	if l.code != 0 {
		ev["responseStatus"] = map[string]any{"code": l.code}
	}
	data, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func TestAuditLogWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	from, to := at(10), at(20)
	const sa = "system:serviceaccount:courier-system:courier"
	courierUA, kueueUA, patchedUA := "courier/v0.1.0 (linux/amd64)", "kueue/v0.19.1 (linux/amd64)", "kueue-v0.19.1-multikueue-qps1000/v0.0.0"
	done := func(verb, ua, user, group, resource, sub string, code int, s float64) string {
		return auditLine{id: "r", stage: "ResponseComplete", verb: verb, ua: ua, user: user, group: group, resource: resource, sub: sub,
			code: code, received: at(s), at: at(s + 0.01)}.String()
	}
	watch := func(id, stage, ua, user, resource, ns, selector string, received, stageAt float64) string {
		uri := "/apis/kueue.x-k8s.io/v1beta2/workloads?watch=true"
		if selector != "" {
			uri += "&labelSelector=" + selector
		}
		return auditLine{id: id, stage: stage, verb: "watch", ua: ua, user: user, group: "kueue.x-k8s.io", resource: resource, ns: ns,
			uri: uri, code: 200, received: at(received), at: at(stageAt)}.String()
	}
	// on writes to one object, a Workload of team-a, or an event.
	on := func(verb, ua, resource, sub, name, query string, code int, s float64) string {
		group := "kueue.x-k8s.io"
		if resource == "events" {
			group = "events.k8s.io"
		}
		return auditLine{id: "r", stage: "ResponseComplete", verb: verb, ua: ua, user: sa, group: group, resource: resource, sub: sub,
			ns: "team-a", name: name, uri: "/apis/" + group + "/v1/namespaces/team-a/" + resource + query, code: code, received: at(s), at: at(s + 0.01)}.String()
	}
	courier := Identity{Program: "courier", User: sa}
	kueue := Identity{Program: "kueue", User: sa}
	wlStatus := call{Verb: "patch", Group: "kueue.x-k8s.io", Resource: "workloads", Subresource: "status"}
	wlPatch := call{Verb: "patch", Group: "kueue.x-k8s.io", Resource: "workloads"}
	cases := map[string]struct {
		lines       []string
		want        windowAudit
		wantSkipped int
	}{
		"requests in the window by identity and call, conflicts and failures apart": {
			lines: []string{
				done("create", courierUA, sa, "trainer.kubeflow.org", "trainjobs", "", 201, 10),
				done("patch", courierUA, sa, "kueue.x-k8s.io", "workloads", "status", 200, 11),
				done("patch", courierUA, sa, "kueue.x-k8s.io", "workloads", "status", 409, 11.5),
				done("create", courierUA, sa, "", "events", "", 403, 12),
				done("get", courierUA, sa, "", "", "", 200, 12),
				done("update", kueueUA, sa, "kueue.x-k8s.io", "workloads", "status", 200, 13),
				done("update", patchedUA, sa, "kueue.x-k8s.io", "workloads", "status", 200, 14),
				done("get", courierUA, sa, "trainer.kubeflow.org", "trainjobs", "", 200, 9),
				done("get", courierUA, sa, "trainer.kubeflow.org", "trainjobs", "", 200, 20),
				auditLine{id: "r", stage: "ResponseStarted", verb: "get", ua: courierUA, user: sa, received: at(12)}.String(),
			},
			want: windowAudit{
				Requests: map[Identity]map[call]*callCount{
					courier: {
						{Verb: "create", Group: "trainer.kubeflow.org", Resource: "trainjobs"}:                 {N: 1},
						{Verb: "patch", Group: "kueue.x-k8s.io", Resource: "workloads", Subresource: "status"}: {N: 2, Conflict: 1},
						{Verb: "create", Resource: "events"}:                                                   {N: 1, Failed: 1},
						{Verb: "get"}:                                                                          {N: 1},
					},
					kueue: {{Verb: "update", Group: "kueue.x-k8s.io", Resource: "workloads", Subresource: "status"}: {N: 2}},
				},
				PeakQPS: map[Identity]uint64{courier: 2, kueue: 1},
			},
		},
		"a conflict is lost to the program of the write before it, which earlier windows tell too": {
			lines: []string{
				on("create", kueueUA, "workloads", "", "wl-a", "", 201, 5),
				on("patch", courierUA, "workloads", "status", "wl-a", "", 200, 11),
				on("patch", kueueUA, "workloads", "status", "wl-a", "", 409, 11.2),
				on("patch", kueueUA, "workloads", "status", "wl-a", "", 200, 11.4),
				on("patch", courierUA, "workloads", "status", "wl-a", "", 409, 11.6),
				// A failed write and a dry run store nothing, and a create
				// refused as existing is no lost race.
				on("patch", courierUA, "workloads", "", "wl-a", "", 403, 11.65),
				on("create", kueueUA, "workloads", "", "wl-a", "?dryRun=All", 201, 11.7),
				on("patch", kueueUA, "workloads", "", "wl-a", "", 409, 11.8),
				on("patch", courierUA, "workloads", "status", "wl-b", "", 409, 12),
				on("create", kueueUA, "events", "", "ev-1", "", 409, 12.5),
				on("delete", kueueUA, "workloads", "", "wl-a", "", 200, 13),
				on("patch", courierUA, "workloads", "", "wl-a", "", 409, 13.5),
			},
			want: windowAudit{
				Requests: map[Identity]map[call]*callCount{
					courier: {
						wlStatus: {N: 3, Conflict: 2, LostTo: map[string]uint64{"kueue": 1, unknownWriter: 1}},
						wlPatch:  {N: 2, Conflict: 1, Failed: 1, LostTo: map[string]uint64{unknownWriter: 1}},
					},
					kueue: {
						wlStatus: {N: 2, Conflict: 1, LostTo: map[string]uint64{"courier": 1}},
						{Verb: "create", Group: "kueue.x-k8s.io", Resource: "workloads", DryRun: true}: {N: 1},
						wlPatch: {N: 1, Conflict: 1, LostTo: map[string]uint64{"kueue": 1}},
						{Verb: "create", Group: "events.k8s.io", Resource: "events"}:     {N: 1, Conflict: 1},
						{Verb: "delete", Group: "kueue.x-k8s.io", Resource: "workloads"}: {N: 1},
					},
				},
				PeakQPS: map[Identity]uint64{courier: 3, kueue: 4},
			},
		},
		"a dry-run write is its own call": {
			lines: []string{
				auditLine{id: "r", stage: "ResponseComplete", verb: "create", ua: kueueUA, user: "admin", group: "kueue.x-k8s.io", resource: "workloads",
					ns: "team-a", uri: "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads?dryRun=All", code: 201, received: at(11)}.String(),
				auditLine{id: "r", stage: "ResponseComplete", verb: "create", ua: kueueUA, user: "admin", group: "kueue.x-k8s.io", resource: "workloads",
					ns: "team-a", uri: "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads", code: 201, received: at(11)}.String(),
			},
			want: windowAudit{
				Requests: map[Identity]map[call]*callCount{{Program: "kueue", User: "admin"}: {
					{Verb: "create", Group: "kueue.x-k8s.io", Resource: "workloads", DryRun: true}: {N: 1},
					{Verb: "create", Group: "kueue.x-k8s.io", Resource: "workloads"}:               {N: 1},
				}},
				PeakQPS: map[Identity]uint64{{Program: "kueue", User: "admin"}: 2},
			},
		},
		"a watch counts when it starts, and runs in the window from its start to its end": {
			lines: []string{
				watch("w1", "ResponseStarted", courierUA, sa, "workloads", "", "courier.dev%2Forigin%3Dx", 5, 5.01),
				watch("w2", "ResponseStarted", courierUA, sa, "workloads", "team-a", "", 12, 12.01),
				watch("w1", "ResponseComplete", courierUA, sa, "workloads", "", "courier.dev%2Forigin%3Dx", 5, 15),
				watch("w3", "ResponseStarted", kueueUA, "admin", "workloads", "", "", 1, 1.01),
				watch("w3", "ResponseComplete", kueueUA, "admin", "workloads", "", "", 1, 8),
				watch("w4", "ResponseComplete", kueueUA, sa, "workloads", "", "", 14, 14),
			},
			want: windowAudit{
				Requests: map[Identity]map[call]*callCount{
					courier: {{Verb: "watch", Group: "kueue.x-k8s.io", Resource: "workloads"}: {N: 1}},
					kueue:   {{Verb: "watch", Group: "kueue.x-k8s.io", Resource: "workloads"}: {N: 1}},
				},
				PeakQPS: map[Identity]uint64{courier: 1, kueue: 1},
				Watches: []watchSpan{
					{Identity: courier, Resource: "workloads.kueue.x-k8s.io", Selector: "courier.dev/origin=x", Seconds: 5},
					{Identity: courier, Resource: "workloads.kueue.x-k8s.io", Namespace: "team-a", Seconds: 8},
				},
			},
		},
		"a line that is not an event is skipped": {
			lines:       []string{`{"kind":"Event","stage":"Resp`, "not json at all"},
			want:        windowAudit{Requests: map[Identity]map[call]*callCount{}, PeakQPS: map[Identity]uint64{}},
			wantSkipped: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newAuditLog("")
			read, got, err := consume(l, strings.NewReader(strings.Join(tc.lines, "\n")+"\n"), from, to)
			if err != nil {
				t.Fatal(err)
			}
			if int(read) != len(strings.Join(tc.lines, "\n"))+1 {
				t.Errorf("read %d bytes, want every line's", read)
			}
			if got.Skipped != tc.wantSkipped {
				t.Errorf("skipped %d lines, want %d", got.Skipped, tc.wantSkipped)
			}
			tc.want.Skipped = tc.wantSkipped
			opts := []cmp.Option{cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b watchSpan) bool { return a.Seconds < b.Seconds }),
				cmp.AllowUnexported(windowAudit{})}
			if diff := cmp.Diff(tc.want, got, opts...); diff != "" {
				t.Errorf("window (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuditLogReadsOnFromWhereItStopped(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	const sa = "system:serviceaccount:courier-system:courier"
	line := func(s float64) string {
		return auditLine{id: "r", stage: "ResponseComplete", verb: "create", ua: "courier/v", user: sa, resource: "events",
			code: 201, received: t0.Add(time.Duration(s) * time.Second)}.String()
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	// The second line is still being written: it has no newline yet.
	if err := os.WriteFile(path, []byte(line(1)+"\n"+line(2)[:20]), 0o600); err != nil {
		t.Fatal(err)
	}
	l := newAuditLog(path)
	courier := Identity{Program: "courier", User: sa}
	events := call{Verb: "create", Resource: "events"}
	first, err := l.window(t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n := first.Requests[courier][events].N; n != 1 || first.Skipped != 0 {
		t.Errorf("first read: %d events created and %d lines skipped, want 1 and 0", n, first.Skipped)
	}
	if err := os.WriteFile(path, []byte(line(1)+"\n"+line(2)+"\n"+line(3)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := l.window(t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n := second.Requests[courier][events].N; n != 2 || second.Skipped != 0 {
		t.Errorf("second read: %d events created and %d lines skipped, want 2 (the lines after the first read) and 0", n, second.Skipped)
	}
}

func TestAuditLogFollowsRotation(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	const sa = "system:serviceaccount:courier-system:courier"
	line := func(s int) string {
		return auditLine{id: fmt.Sprint(s), stage: "ResponseComplete", verb: "create", ua: "courier/v", user: sa, resource: "events",
			code: 201, received: t0.Add(time.Duration(s) * time.Second)}.String() + "\n"
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	appendLines := func(path string, lines ...string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
			t.Fatal(err)
		}
	}
	l := newAuditLog(path)
	defer l.close()
	courier := Identity{Program: "courier", User: sa}
	events := call{Verb: "create", Resource: "events"}
	// created reads a window and returns the events created in it and
	// the rotations it followed.
	created := func() (int, int) {
		t.Helper()
		w, err := l.window(t0, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if c := w.Requests[courier][events]; c != nil {
			return int(c.N), w.Rotations
		}
		return 0, w.Rotations
	}

	appendLines(path, line(1))
	if n, r := created(); n != 1 || r != 0 {
		t.Errorf("before any rotation: %d events created through %d rotations, want 1 through 0", n, r)
	}
	// Written to the old file just before the API server renamed it; the
	// new file is not there yet.
	appendLines(path, line(2), line(3))
	if err := os.Rename(path, filepath.Join(dir, "audit-2026-11-28T09-00-04.000.log")); err != nil {
		t.Fatal(err)
	}
	if n, r := created(); n != 2 || r != 0 {
		t.Errorf("renamed, no new file yet: %d events created through %d rotations, want 2 (the old file's last lines) through 0", n, r)
	}
	appendLines(path, line(4))
	if n, r := created(); n != 1 || r != 1 {
		t.Errorf("the new file: %d events created through %d rotations, want 1 through 1", n, r)
	}
	// A rotation between two reads: the old file's rest, then the new one's.
	appendLines(path, line(5))
	if err := os.Rename(path, filepath.Join(dir, "audit-2026-11-28T09-00-07.000.log")); err != nil {
		t.Fatal(err)
	}
	appendLines(path, line(6), line(7))
	if n, r := created(); n != 3 || r != 1 {
		t.Errorf("rotated between reads: %d events created through %d rotations, want 3 (one from the old file, two from the new) through 1", n, r)
	}
}

func TestRequestTotals(t *testing.T) {
	r := APIRequests{
		ByCall: map[string]callCount{
			"create trainjobs.trainer.kubeflow.org":     {N: 3},
			"patch workloads.kueue.x-k8s.io/status":     {N: 4, Conflict: 1},
			"delete trainjobs.trainer.kubeflow.org":     {N: 3},
			"get trainjobs.trainer.kubeflow.org":        {N: 2},
			"list clusterqueues.kueue.x-k8s.io":         {N: 1},
			"watch workloads.kueue.x-k8s.io":            {N: 2},
			"get -":                                     {N: 5},
			"create workloads.kueue.x-k8s.io (dry run)": {N: 4},
			"deletecollection pods":                     {N: 1},
			"proxy services":                            {N: 1},
			"watch trainjobs.trainer.kubeflow.org/foo":  {N: 1},
		},
		WatchEvents: map[string]float64{"workloads.kueue.x-k8s.io": 30, "trainjobs.trainer.kubeflow.org": 12},
		WatchBytes:  map[string]float64{"workloads.kueue.x-k8s.io": 3000, "trainjobs.trainer.kubeflow.org": 1200},
	}
	want := RequestTotals{Writes: 11, Gets: 2, Lists: 1, WatchesOpened: 3, Other: 10, WatchEvents: 42, WatchBytes: 4200}
	if diff := cmp.Diff(want, r.Totals()); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
}

func TestCallString(t *testing.T) {
	cases := map[string]struct {
		call call
		want string
	}{
		"a subresource of a group's resource": {call{Verb: "patch", Group: "kueue.x-k8s.io", Resource: "workloads", Subresource: "status"}, "patch workloads.kueue.x-k8s.io/status"},
		"the core API has no group":           {call{Verb: "create", Resource: "events"}, "create events"},
		"the events API has one":              {call{Verb: "create", Group: "events.k8s.io", Resource: "events"}, "create events.events.k8s.io"},
		"discovery is on no resource":         {call{Verb: "get"}, "get -"},
		"a dry run":                           {call{Verb: "create", Group: "kueue.x-k8s.io", Resource: "workloads", DryRun: true}, "create workloads.kueue.x-k8s.io (dry run)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.call.String(); got != tc.want {
				t.Errorf("call %+v is %q, want %q", tc.call, got, tc.want)
			}
		})
	}
}

// consume reads whole lines from r into a window of its own, as window
// does from the file, and returns how many bytes they took.
func consume(l *auditLog, r io.Reader, from, to time.Time) (int64, windowAudit, error) {
	w, perSecond := newWindowAudit()
	read, err := l.scan(r, from, to, &w, perSecond)
	l.finish(&w, perSecond, from, to)
	return read, w, err
}
