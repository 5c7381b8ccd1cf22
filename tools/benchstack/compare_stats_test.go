package benchstack

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/benchreport"
	"github.com/courierdev/courier/tools/localcluster"
)

func TestStatOf(t *testing.T) {
	cases := map[string]struct {
		values []float64
		want   Stat
	}{
		"three repeats: the middle one":       {[]float64{2.4, 1.9, 2.1}, Stat{Median: 2.1, Min: 1.9, Max: 2.4, N: 3}},
		"two: the mean of both":               {[]float64{3, 1}, Stat{Median: 2, Min: 1, Max: 3, N: 2}},
		"four: the mean of the middle two":    {[]float64{4, 1, 3, 2}, Stat{Median: 2.5, Min: 1, Max: 4, N: 4}},
		"one":                                 {[]float64{7}, Stat{Median: 7, Min: 7, Max: 7, N: 1}},
		"none":                                {nil, Stat{}},
		"the values passed are left in order": {[]float64{5, 1, 3}, Stat{Median: 3, Min: 1, Max: 5, N: 3}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := append([]float64(nil), tc.values...)
			if diff := cmp.Diff(tc.want, statOf(in)); diff != "" {
				t.Errorf("stat (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.values, in); diff != "" {
				t.Errorf("statOf changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	all := []string{SystemCourier, SystemMultiKueue, SystemMultiKueueQPS}
	cases := map[string]struct {
		systems []string
		repeats int
		want    [][]string
	}{
		"three systems: each first, second and third once in three repeats": {
			systems: all, repeats: 4,
			want: [][]string{
				{SystemCourier, SystemMultiKueue, SystemMultiKueueQPS},
				{SystemMultiKueue, SystemMultiKueueQPS, SystemCourier},
				{SystemMultiKueueQPS, SystemCourier, SystemMultiKueue},
				{SystemCourier, SystemMultiKueue, SystemMultiKueueQPS},
			},
		},
		"two systems alternate": {
			systems: []string{SystemCourier, SystemMultiKueueQPS}, repeats: 2,
			want: [][]string{{SystemCourier, SystemMultiKueueQPS}, {SystemMultiKueueQPS, SystemCourier}},
		},
		"one system": {systems: []string{SystemCourier}, repeats: 2, want: [][]string{{SystemCourier}, {SystemCourier}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got [][]string
			for r := range tc.repeats {
				got = append(got, rotation(tc.systems, r))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("orders (-want +got):\n%s", diff)
			}
		})
	}
}

// phaseWith is a phase of a system under burst-100 with the given
// throughput, manager side CPU and Courier writes to the manager.
func phaseWith(system string, repeat int, throughput, managerCPU float64, courierPatches uint64) PhaseResult {
	p := PhaseResult{System: system, SystemLabel: Systems[system].Label, Load: "burst-100", Jobs: 100, Repeat: repeat,
		Throughput: throughput, SubmitToComplete: benchreport.Percentiles{P50: 10, P95: 20, P99: 30},
		Sides: map[string]SideCost{sideManager: {CPUMsPerJob: managerCPU}, sideWorker: {CPUMsPerJob: 50}}}
	p.ManagerRequests.of(Identity{Program: "courier", User: "system:serviceaccount:courier-system:courier-manager"}).merge(
		map[call]*callCount{
			{Verb: "patch", Group: "kueue.x-k8s.io", Resource: "workloads", Subresource: "status"}: {N: courierPatches, Conflict: 1},
			{Verb: "get", Group: "kueue.x-k8s.io", Resource: "workloads"}:                          {N: 7},
		}, 3)
	p.WorkerRequests.of(Identity{Program: Systems[system].Program, User: localcluster.WorkerUser}).merge(
		map[call]*callCount{{Verb: "create", Group: "kueue.x-k8s.io", Resource: "workloads"}: {N: 100}}, 2)
	read := watchTotal{Events: managerCPU / 10, Bytes: 1024 * managerCPU / 10}
	p.CourierWatch = &CourierWatch{ByKind: map[string]watchTotal{"manager Workload.kueue.x-k8s.io": read}}
	return p
}

func TestSummarizeRepeats(t *testing.T) {
	loads := []Load{{Name: "burst-100", Jobs: 100}, {Name: "rate-1", Jobs: 20, Rate: 1}}
	phases := []PhaseResult{
		phaseWith(SystemCourier, 0, 2.0, 100, 200),
		phaseWith(SystemMultiKueue, 0, 1.0, 150, 0),
		phaseWith(SystemMultiKueue, 1, 1.2, 140, 0),
		phaseWith(SystemCourier, 1, 2.4, 90, 300),
		phaseWith(SystemCourier, 2, 2.2, 120, 250),
	}
	phases[3].Invariants.OnTwoWorkers = []string{"j"}
	phases[4].Unfinished = []string{"k", "l"}
	got := summarizeRepeats(loads, phases)
	if len(got) != 1 || got[0].Load != "burst-100" || len(got[0].Systems) != 2 {
		t.Fatalf("summaries %+v, want burst-100 alone, of two systems", got)
	}
	c, mk := got[0].Systems[0], got[0].Systems[1]
	if c.System != SystemCourier || mk.System != SystemMultiKueue {
		t.Fatalf("systems %s, %s, want Courier then MultiKueue, in SystemOrder", c.System, mk.System)
	}
	type picked struct {
		Repeats             int
		Throughput, Manager Stat
		CourierWrites       Stat
		WorkerWrites        Stat
		Patches, Refused    Stat
		WatchEvents, ByKind Stat
		Unfinished, Broken  int
	}
	pick := func(s SystemSummary) picked {
		return picked{s.Repeats, s.Figures["throughput"], s.Figures["manager.cpu"], s.Figures["courierToManager.writes"],
			s.Figures["toWorkers.writes"], s.ManagerWrites["courier: patch workloads.kueue.x-k8s.io/status"],
			s.ManagerWrites["courier: patch workloads.kueue.x-k8s.io/status (409)"],
			s.Figures["courierWatch.manager.events"], s.CourierWatch["manager Workload.kueue.x-k8s.io"], s.Unfinished, s.Broken}
	}
	want := []picked{
		{Repeats: 3, Throughput: Stat{Median: 2.2, Min: 2, Max: 2.4, N: 3}, Manager: Stat{Median: 100, Min: 90, Max: 120, N: 3},
			CourierWrites: Stat{Median: 2.5, Min: 2, Max: 3, N: 3}, WorkerWrites: Stat{Median: 1, Min: 1, Max: 1, N: 3},
			Patches: Stat{Median: 2.5, Min: 2, Max: 3, N: 3}, Refused: Stat{Median: 0.01, Min: 0.01, Max: 0.01, N: 3},
			WatchEvents: Stat{Median: 10, Min: 9, Max: 12, N: 3}, ByKind: Stat{Median: 10, Min: 9, Max: 12, N: 3}, Unfinished: 2, Broken: 1},
		// MultiKueue's phases hold an idle Courier's requests too.
		{Repeats: 2, Throughput: Stat{Median: 1.1, Min: 1, Max: 1.2, N: 2}, Manager: Stat{Median: 145, Min: 140, Max: 150, N: 2},
			CourierWrites: Stat{N: 2}, WorkerWrites: Stat{Median: 1, Min: 1, Max: 1, N: 2},
			Patches: Stat{N: 2}, Refused: Stat{Median: 0.01, Min: 0.01, Max: 0.01, N: 2},
			WatchEvents: Stat{Median: 14.5, Min: 14, Max: 15, N: 2}, ByKind: Stat{Median: 14.5, Min: 14, Max: 15, N: 2}},
	}
	if diff := cmp.Diff(want, []picked{pick(c), pick(mk)}, approxStats); diff != "" {
		t.Errorf("summaries (-want +got):\n%s", diff)
	}
}

var approxStats = cmp.Comparer(func(a, b float64) bool { return a == b || (a-b < 1e-9 && b-a < 1e-9) })

func TestManagerWritesPerJob(t *testing.T) {
	p := phaseWith(SystemCourier, 0, 1, 1, 150)
	p.ManagerRequests.of(Identity{Program: "kueue", User: "admin"}).merge(
		map[call]*callCount{
			{Verb: "update", Group: "kueue.x-k8s.io", Resource: "workloads", Subresource: "status"}: {N: 300, Conflict: 30,
				LostTo: map[string]uint64{"courier": 20, "kueue": 10}},
			{Verb: "create", Group: "kueue.x-k8s.io", Resource: "workloads", DryRun: true}: {N: 640},
			{Verb: "patch", Resource: "events"}:                                            {N: 10, Failed: 2},
			{Verb: "list", Group: "kueue.x-k8s.io", Resource: "workloads"}:                 {N: 4},
		}, 9)
	p.ManagerRequests.of(Identity{Program: "courier-bench", User: "admin"}).merge(
		map[call]*callCount{{Verb: "create", Group: "trainer.kubeflow.org", Resource: "trainjobs"}: {N: 100}}, 9)
	want := map[string]float64{
		"courier: patch workloads.kueue.x-k8s.io/status":                       1.5,
		"courier: patch workloads.kueue.x-k8s.io/status (409)":                 0.01,
		"kueue: update workloads.kueue.x-k8s.io/status":                        3,
		"kueue: update workloads.kueue.x-k8s.io/status (409)":                  0.3,
		"kueue: update workloads.kueue.x-k8s.io/status (409, lost to courier)": 0.2,
		"kueue: update workloads.kueue.x-k8s.io/status (409, lost to kueue)":   0.1,
		"kueue: create workloads.kueue.x-k8s.io (dry run)":                     6.4,
		"kueue: patch events":          0.1,
		"kueue: patch events (failed)": 0.02,
	}
	if diff := cmp.Diff(want, managerWritesPerJob(&p)); diff != "" {
		t.Errorf("writes per job (-want +got):\n%s", diff)
	}
}

func TestFloorFigures(t *testing.T) {
	floor := phaseWith(SystemFloor, 0, 9, 40, 0)
	courier := phaseWith(SystemCourier, 0, 2, 100, 200)
	type present struct{ Running, Dispatcher, Complete bool }
	pick := func(s SystemSummary) present {
		_, running := s.Figures["submitToRunning.p50"]
		_, dispatcher := s.Figures["dispatcher.cpu"]
		_, complete := s.Figures["submitToComplete.p50"]
		return present{running, dispatcher, complete}
	}
	got := []present{pick(summarizeSystem(Systems[SystemFloor], []*PhaseResult{&floor})),
		pick(summarizeSystem(Systems[SystemCourier], []*PhaseResult{&courier}))}
	want := []present{{Complete: true}, {Running: true, Dispatcher: true, Complete: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("figures present, the floor then Courier (-want +got):\n%s", diff)
	}
}

func TestStackFigures(t *testing.T) {
	lookup := func(key string) figure {
		for _, f := range figures {
			if f.key == key {
				return f
			}
		}
		t.Fatalf("no figure %q", key)
		return figure{}
	}
	measured := []benchreport.ProcessCPU{
		{Name: "manager/kube-apiserver", CPUSeconds: 30},
		{Name: localcluster.CourierProcess, CPUSeconds: 4},
		{Name: harnessProcess, CPUSeconds: 6},
	}
	type value struct {
		V  float64
		OK bool
	}
	cases := map[string]struct {
		cpu  []benchreport.ProcessCPU
		want map[string]value
	}{
		"every process summed per job, the harness its own row too": {
			cpu:  measured,
			want: map[string]value{"stack.cpu": {400, true}, "process." + harnessProcess: {60, true}},
		},
		"no process measured: both absent, not zero": {
			want: map[string]value{"stack.cpu": {0, false}, "process." + harnessProcess: {0, false}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &PhaseResult{Jobs: 100, CPU: tc.cpu}
			got := map[string]value{}
			for key := range tc.want {
				v, ok := lookup(key).get(p)
				got[key] = value{v, ok}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("figures (-want +got):\n%s", diff)
			}
		})
	}
}
