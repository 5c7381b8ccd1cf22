package adapter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	courier "github.com/courierdev/courier/api/v1alpha1"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// workerStarts does to a copy what the worker's API server and Kueue do to
// a TrainJob they start: Kueue's own RuntimePatch entry, and no suspend.
func workerStarts(t testing.TB, copy *unstructured.Unstructured) {
	t.Helper()
	patches, _, _ := unstructured.NestedSlice(copy.Object, "spec", "runtimePatches")
	patches = append(patches, map[string]any{"manager": "kueue.x-k8s.io/manager", "time": "2026-11-23T10:00:00Z"})
	if err := unstructured.SetNestedSlice(copy.Object, patches, "spec", "runtimePatches"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(copy.Object, false, "spec", "suspend"); err != nil {
		t.Fatal(err)
	}
}

// stampTimes does what Trainer's webhook does to a TrainJob it admits:
// each RuntimePatch entry without a time gets one.
func stampTimes(t testing.TB, job *unstructured.Unstructured, at string) {
	t.Helper()
	patches, _, _ := unstructured.NestedSlice(job.Object, "spec", "runtimePatches")
	for _, p := range patches {
		if m := p.(map[string]any); m["time"] == nil {
			m["time"] = at
		}
	}
	if err := unstructured.SetNestedSlice(job.Object, patches, "spec", "runtimePatches"); err != nil {
		t.Fatal(err)
	}
}

func TestTrainJobForward(t *testing.T) {
	base := func() *trainertesting.TrainJobWrapper {
		return trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy).Label("team", "a").RuntimePatch("example.com/user", "x", "1")
	}
	cases := map[string]struct {
		// dispatched is the job as it was copied, now the one on the manager.
		dispatched, now *trainertesting.TrainJobWrapper
		// started: the worker's Kueue started the copy.
		started bool
		// edit changes the copy on the worker by hand, or as the
		// worker's webhooks do.
		edit func(*unstructured.Unstructured)
		// manager changes the manager's job as its webhooks do.
		manager       func(*unstructured.Unstructured)
		noRecord      bool
		wantUpdate    bool
		wantForwarded []string
		wantRestored  []string
		wantRefused   []string
		// wantPatches are the copy's RuntimePatches managers after Update.
		wantPatches []string
		wantLabels  map[string]string
	}{
		"nothing changed, the worker's Kueue started the copy": {
			dispatched: base(), now: base().RuntimePatch("kueue.x-k8s.io/manager", "k", "m"), started: true,
		},
		"the worker's Trainer stamped the copy's RuntimePatches with their time": {
			dispatched: base(), now: base(), started: true,
			edit: func(u *unstructured.Unstructured) { stampTimes(t, u, "2026-11-26T15:30:04Z") },
		},
		"both Trainers stamped their RuntimePatches, at other times": {
			dispatched: base(), now: base(), started: true,
			edit:    func(u *unstructured.Unstructured) { stampTimes(t, u, "2026-11-26T15:30:04Z") },
			manager: func(u *unstructured.Unstructured) { stampTimes(t, u, "2026-11-26T15:29:47Z") },
		},
		"a RuntimePatch added on the manager reaches a suspended, stamped copy": {
			dispatched: base(), now: base().RuntimePatch("example.com/late", "y", "2"),
			edit: func(u *unstructured.Unstructured) {
				workerStarts(t, u)
				stampTimes(t, u, "2026-11-26T15:30:04Z")
				_ = unstructured.SetNestedField(u.Object, true, "spec", "suspend")
			},
			wantUpdate: true, wantForwarded: []string{runtimePatchesField},
			wantPatches: []string{"example.com/user", "example.com/late", "kueue.x-k8s.io/manager"},
		},
		"a label added on the manager reaches a running copy": {
			dispatched: base(), now: base().Label("owner", "b"), started: true,
			wantUpdate: true, wantForwarded: []string{labelsField},
			wantLabels: map[string]string{"team": "a", "owner": "b"},
		},
		"a RuntimePatch added on the manager reaches a suspended copy, beside the worker Kueue's entry": {
			dispatched: base(), now: base().RuntimePatch("example.com/late", "y", "2"),
			edit: func(u *unstructured.Unstructured) {
				workerStarts(t, u)
				_ = unstructured.SetNestedField(u.Object, true, "spec", "suspend")
			},
			wantUpdate: true, wantForwarded: []string{runtimePatchesField},
			wantPatches: []string{"example.com/user", "example.com/late", "kueue.x-k8s.io/manager"},
		},
		"a RuntimePatch added on the manager is refused while the copy runs": {
			dispatched: base(), now: base().RuntimePatch("example.com/late", "y", "2"), started: true,
			wantRefused: []string{runtimePatchesField},
		},
		"another spec field changed on the manager is refused, the label still goes": {
			dispatched: base(), now: base().Label("owner", "b").RuntimeRef("other"), started: true,
			wantUpdate: true, wantForwarded: []string{labelsField}, wantRefused: []string{"spec.runtimeRef"},
			wantLabels: map[string]string{"team": "a", "owner": "b"},
		},
		"a label edited on the worker is set back, Courier's and Kueue's kept": {
			dispatched: base(), now: base(), started: true,
			edit: func(u *unstructured.Unstructured) {
				labels := u.GetLabels()
				labels["team"] = "hijacked"
				labels["kueue.x-k8s.io/extra"] = "worker"
				u.SetLabels(labels)
			},
			wantUpdate: true, wantRestored: []string{labelsField},
			wantLabels: map[string]string{"team": "a", "kueue.x-k8s.io/extra": "worker"},
		},
		"RuntimePatches edited on a running copy are reported, not touched": {
			dispatched: base(), now: base(), started: true,
			edit: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"manager": "example.com/other"}}, "spec", "runtimePatches")
			},
			wantRefused: []string{runtimePatchesField},
		},
		"RuntimePatches added on a suspended copy, which had none, are removed": {
			dispatched: trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy), now: trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy),
			edit: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"manager": "example.com/other"}}, "spec", "runtimePatches")
				_ = unstructured.SetNestedField(u.Object, true, "spec", "suspend")
			},
			wantUpdate: true, wantRestored: []string{runtimePatchesField}, wantPatches: []string{},
		},
		"a priority-class label travels; the queue label does not": {
			dispatched: base(), now: base().Label("kueue.x-k8s.io/priority-class", "high").Label("kueue.x-k8s.io/queue-name", "other"), started: true,
			wantUpdate: true, wantForwarded: []string{labelsField},
			wantLabels: map[string]string{"team": "a", "kueue.x-k8s.io/priority-class": "high"},
		},
		"a copy from before the record: any difference is the manager's": {
			dispatched: base(), now: base().Label("owner", "b"), started: true, noRecord: true,
			wantUpdate: true, wantForwarded: []string{labelsField},
			wantLabels: map[string]string{"team": "a", "owner": "b"},
		},
	}
	a := NewTrainJob()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			to := Destination{Workload: "wl", Origin: "org"}
			copy, err := a.RemoteCopy(trainJob(t, tc.dispatched), to)
			if err != nil {
				t.Fatal(err)
			}
			if tc.noRecord {
				annotations := copy.GetAnnotations()
				delete(annotations, courier.SpecHashesAnnotation)
				copy.SetAnnotations(annotations)
			}
			if tc.started {
				workerStarts(t, copy)
			}
			if tc.edit != nil {
				tc.edit(copy)
			}
			now := trainJob(t, tc.now)
			if tc.manager != nil {
				tc.manager(now)
			}
			got, err := a.Forward(now, copy, to)
			if err != nil {
				t.Fatalf("Forward() = %v", err)
			}
			if diff := cmp.Diff(tc.wantForwarded, got.Forwarded); diff != "" {
				t.Errorf("Forwarded (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRestored, got.Restored); diff != "" {
				t.Errorf("Restored (-want +got):\n%s", diff)
			}
			var refused []string
			for _, r := range got.Refused {
				refused = append(refused, r.Field)
			}
			if diff := cmp.Diff(tc.wantRefused, refused); diff != "" {
				t.Errorf("Refused (-want +got):\n%s", diff)
			}
			if (got.Update != nil) != tc.wantUpdate {
				t.Fatalf("Update = %v, want one: %v", got.Update, tc.wantUpdate)
			}
			if got.Update == nil {
				return
			}
			if tc.wantPatches != nil {
				managers := []string{}
				patches, _, _ := unstructured.NestedSlice(got.Update.Object, "spec", "runtimePatches")
				for _, p := range patches {
					managers = append(managers, p.(map[string]any)["manager"].(string))
				}
				if diff := cmp.Diff(tc.wantPatches, managers); diff != "" {
					t.Errorf("RuntimePatches managers (-want +got):\n%s", diff)
				}
			}
			if tc.wantLabels != nil {
				labels := got.Update.GetLabels()
				delete(labels, courier.OriginLabel)
				delete(labels, PrebuiltWorkloadLabel)
				if diff := cmp.Diff(tc.wantLabels, labels); diff != "" {
					t.Errorf("labels (-want +got):\n%s", diff)
				}
			}
			// Once written, the copy is in step: nothing more to do.
			again, err := a.Forward(now, got.Update, to)
			if err != nil {
				t.Fatal(err)
			}
			if again.Update != nil || len(again.Forwarded)+len(again.Restored) > 0 {
				t.Errorf("a second Forward() after the update wants more: %+v", again)
			}
		})
	}
}

func TestBatchJobForward(t *testing.T) {
	job := func(parallelism int64, image string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "j", "namespace": "ns", "uid": "u1"},
			"spec": map[string]any{
				"managedBy":   "courier.dev/dispatcher",
				"suspend":     true,
				"parallelism": parallelism,
				"completions": int64(4),
				"selector":    map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "u1"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"batch.kubernetes.io/controller-uid": "u1"}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": image}}},
				},
			},
		}}
	}
	// started does what the worker's API server and Kueue do: a selector
	// of the worker's own, the pod set's node selector, and no suspend.
	started := func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "w1"}}, "spec", "selector")
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"pool": "gpu"}, "spec", "template", "spec", "nodeSelector")
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"kueue.x-k8s.io/podset": "main"}, "spec", "template", "metadata", "labels")
		_ = unstructured.SetNestedField(u.Object, false, "spec", "suspend")
	}
	cases := map[string]struct {
		forward       []string
		now           *unstructured.Unstructured
		edit          func(*unstructured.Unstructured)
		wantForwarded []string
		wantRestored  []string
		wantRefused   []string
		wantField     []string
		wantValue     any
	}{
		"started by the worker, nothing changed": {
			now: job(2, "app:1"),
		},
		"a forwarded path changed on the manager": {
			forward: []string{"spec.parallelism"}, now: job(3, "app:1"),
			wantForwarded: []string{"spec.parallelism"}, wantField: []string{"spec", "parallelism"}, wantValue: int64(3),
		},
		"a path not forwarded is refused": {
			now: job(3, "app:1"), wantRefused: []string{"spec.parallelism"},
		},
		"a pod template changed on the manager is refused": {
			forward: []string{"spec.parallelism"}, now: job(2, "app:2"), wantRefused: []string{"spec.template"},
		},
		"a field edited on the worker is set back": {
			now: job(2, "app:1"),
			edit: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(9), "spec", "completions")
			},
			wantRestored: []string{"spec.completions"}, wantField: []string{"spec", "completions"}, wantValue: int64(4),
		},
		"a pod template edited on the worker is reported and left": {
			now: job(2, "app:1"),
			edit: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "c", "image": "evil:1"}}, "spec", "template", "spec", "containers")
			},
			wantRefused: []string{"spec.template"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := New(Kind{GVK: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, ManagedByPath: "spec.managedBy",
				ManagedByValue: "courier.dev/dispatcher", ForwardPaths: tc.forward})
			to := Destination{Workload: "wl", Origin: "org"}
			copy, err := a.RemoteCopy(job(2, "app:1"), to)
			if err != nil {
				t.Fatal(err)
			}
			started(copy)
			if tc.edit != nil {
				tc.edit(copy)
			}
			got, err := a.Forward(tc.now, copy, to)
			if err != nil {
				t.Fatal(err)
			}
			var refused []string
			for _, r := range got.Refused {
				refused = append(refused, r.Field)
			}
			if diff := cmp.Diff(tc.wantRefused, refused); diff != "" {
				t.Errorf("Refused (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantForwarded, got.Forwarded); diff != "" {
				t.Errorf("Forwarded (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRestored, got.Restored); diff != "" {
				t.Errorf("Restored (-want +got):\n%s", diff)
			}
			if tc.wantField == nil {
				if got.Update != nil {
					t.Errorf("Update = %v, want none", got.Update.Object["spec"])
				}
				return
			}
			if got.Update == nil {
				t.Fatal("Update = nil")
			}
			v, _, _ := unstructured.NestedFieldNoCopy(got.Update.Object, tc.wantField...)
			if diff := cmp.Diff(tc.wantValue, v); diff != "" {
				t.Errorf("%v (-want +got):\n%s", tc.wantField, diff)
			}
			if sel, _, _ := unstructured.NestedString(got.Update.Object, "spec", "selector", "matchLabels", "batch.kubernetes.io/controller-uid"); sel != "w1" {
				t.Errorf("the worker's selector was replaced: %q", sel)
			}
			if ns, _, _ := unstructured.NestedString(got.Update.Object, "spec", "template", "spec", "nodeSelector", "pool"); ns != "gpu" {
				t.Errorf("the worker Kueue's node selector was lost: %q", ns)
			}
		})
	}
}

func TestBatchJobSpecChanged(t *testing.T) {
	a := New(Kind{GVK: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, ManagedByPath: "spec.managedBy",
		ManagedByValue: "courier.dev/dispatcher"})
	copyOf := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "j", "namespace": "ns", "generation": int64(1)},
			"spec": map[string]any{
				"managedBy":   "courier.dev/dispatcher",
				"suspend":     true,
				"parallelism": int64(2),
				"template": map[string]any{
					"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "app:1"}}},
				},
			},
		}}
	}
	resume := func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, false, "spec", "suspend")
	}
	cases := map[string]struct {
		// running, if set, starts both versions resumed.
		running bool
		change  func(*unstructured.Unstructured)
		want    bool
	}{
		"the worker's Kueue's pod template labels and node selector": {
			change: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"pool": "gpu"}, "spec", "template", "spec", "nodeSelector")
				_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"kueue.x-k8s.io/podset": "main"}, "spec", "template", "metadata", "labels")
			},
		},
		"resumed by the worker's Kueue": {
			change: resume,
		},
		"suspended again": {
			running: true,
			change:  func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, true, "spec", "suspend") },
			want:    true,
		},
		"a compared field": {
			change: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "parallelism")
			},
			want: true,
		},
		"a suspend that is no boolean": {
			change: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, map[string]any{"x": "y"}, "spec", "suspend")
			},
			want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old, cur := copyOf(), copyOf()
			if tc.running {
				resume(old)
				resume(cur)
			}
			tc.change(cur)
			cur.SetGeneration(2)
			if got := a.SpecChanged(old, cur); got != tc.want {
				t.Errorf("SpecChanged() = %v, want %v", got, tc.want)
			}
			cur.SetGeneration(1)
			if a.SpecChanged(old, cur) {
				t.Error("SpecChanged() = true for the same generation, want false")
			}
		})
	}
}
