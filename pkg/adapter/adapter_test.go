package adapter

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	courier "github.com/courierdev/courier/api/v1alpha1"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

func toUnstructured(t testing.TB, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func trainJob(t testing.TB, w *trainertesting.TrainJobWrapper) *unstructured.Unstructured {
	tj := w.Obj()
	tj.TypeMeta = metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind}
	tj.UID = "uid-1"
	tj.ResourceVersion = "42"
	tj.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-0"}}
	return toUnstructured(t, tj)
}

func TestTrainJobRemoteCopy(t *testing.T) {
	longName := strings.Repeat("w", 70)
	cases := map[string]struct {
		job      *trainertesting.TrainJobWrapper
		workload string
		want     *trainertesting.TrainJobWrapper
		wantAnno map[string]string
	}{
		"metadata subset, managedBy removed, prebuilt label and origin set": {
			job:      trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy).Label("team", "a").Suspend(false),
			workload: "trainjob-tj-1234",
			want: trainertesting.MakeTrainJob("tj", "ns").Label("team", "a").Suspend(false).
				Label("courier.dev/origin", "org").Label(PrebuiltWorkloadLabel, "trainjob-tj-1234"),
		},
		"the manager-side Kueue entry is dropped, the others travel as they are": {
			job: trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy).
				RuntimePatch("example.com/user", "a", "1").
				RuntimePatch("kueue.x-k8s.io/manager", "k", "2").
				RuntimePatch("vendor.io/tuner", "b", "3"),
			workload: "wl",
			want: trainertesting.MakeTrainJob("tj", "ns").
				RuntimePatch("example.com/user", "a", "1").
				RuntimePatch("vendor.io/tuner", "b", "3").
				Label("courier.dev/origin", "org").Label(PrebuiltWorkloadLabel, "wl"),
		},
		"only the Kueue entry: no runtimePatches on the worker": {
			job:      trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy).RuntimePatch("kueue.x-k8s.io/manager", "k", "2"),
			workload: "wl",
			want:     trainertesting.MakeTrainJob("tj", "ns").Label("courier.dev/origin", "org").Label(PrebuiltWorkloadLabel, "wl"),
		},
		"a workload name too long for a label goes in an annotation": {
			job:      trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy),
			workload: longName,
			want:     trainertesting.MakeTrainJob("tj", "ns").Label("courier.dev/origin", "org"),
			wantAnno: map[string]string{PrebuiltWorkloadAnnotation: longName},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := NewTrainJob().RemoteCopy(trainJob(t, tc.job), Destination{Workload: tc.workload, Origin: "org"})
			if err != nil {
				t.Fatalf("RemoteCopy() = %v", err)
			}
			want := tc.want.Obj()
			want.TypeMeta = metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind}
			// Trainer never deletes a TrainJob: its copy needs no finalizer.
			want.Annotations = tc.wantAnno
			// The fingerprints it carries are TestTrainJobForward's concern.
			annotations := got.GetAnnotations()
			delete(annotations, courier.SpecHashesAnnotation)
			got.SetAnnotations(annotations)
			if len(annotations) == 0 {
				unstructured.RemoveNestedField(got.Object, "metadata", "annotations")
			}
			if diff := cmp.Diff(toUnstructured(t, want).Object, got.Object); diff != "" {
				t.Errorf("RemoteCopy() mismatch (-want +got):\n%s", diff)
			}
			if WorkloadName(got) != tc.workload {
				t.Errorf("WorkloadName() = %q, want %q", WorkloadName(got), tc.workload)
			}
		})
	}
}

func TestTrainJobDestination(t *testing.T) {
	zone := &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
		Metadata: &metav1.ObjectMeta{Labels: map[string]string{"zone": "west"}},
	}}
	nodeEnv := trainertesting.MakeTrainJob("x", "ns").NodeEnv("example.com/w", "A", "b").Obj().Spec.RuntimePatches[0].TrainingRuntimeSpec
	full := trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy)
	for i := range 16 {
		full.RuntimePatch(fmt.Sprintf("example.com/u%d", i), "a", "b")
	}
	cases := map[string]struct {
		job     *trainertesting.TrainJobWrapper
		patch   *trainer.TrainingRuntimeSpecPatch
		wantErr any
		want    []string
	}{
		"the worker's patch is Courier's entry, after the job's": {
			job:   trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy).RuntimePatch("example.com/user", "a", "b"),
			patch: zone,
			want:  []string{"example.com/user", "courier.dev/dispatcher"},
		},
		"no patch, no entry of Courier's": {
			job:  trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy).RuntimePatch("example.com/user", "a", "b"),
			want: []string{"example.com/user"},
		},
		"sixteen entries leave no room: the job is refused there": {
			job: full, patch: zone, wantErr: &Rejection{},
		},
		"a worker patch Trainer refuses: the worker is unsuitable": {
			job: trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy), patch: nodeEnv, wantErr: &Unsuitable{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			to := Destination{Workload: "wl", Origin: "org", RuntimePatch: tc.patch}
			err := NewTrainJob().CheckDestination(trainJob(t, tc.job), to)
			switch want := tc.wantErr.(type) {
			case *Rejection:
				if !errors.As(err, &want) {
					t.Fatalf("CheckDestination() = %v, want a *Rejection", err)
				}
				return
			case *Unsuitable:
				if !errors.As(err, &want) {
					t.Fatalf("CheckDestination() = %v, want an *Unsuitable", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckDestination() = %v", err)
			}
			got, err := NewTrainJob().RemoteCopy(trainJob(t, tc.job), to)
			if err != nil {
				t.Fatalf("RemoteCopy() = %v", err)
			}
			patches, err := runtimePatches(got)
			if err != nil {
				t.Fatal(err)
			}
			var managers []string
			for _, p := range patches {
				managers = append(managers, p.Manager)
			}
			if diff := cmp.Diff(tc.want, managers); diff != "" {
				t.Errorf("entries on the worker mismatch (-want +got):\n%s", diff)
			}
			if tc.patch != nil && !cmp.Equal(patches[len(patches)-1].TrainingRuntimeSpec, tc.patch) {
				t.Errorf("Courier's entry = %+v, want the worker's patch", patches[len(patches)-1].TrainingRuntimeSpec)
			}
		})
	}
}

func TestTrainJobCheck(t *testing.T) {
	cases := map[string]struct {
		job     *trainertesting.TrainJobWrapper
		wantErr string
	}{
		"managed by MultiKueue": {
			job: trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy).RuntimePatch("example.com/user", "a", "b"),
		},
		"no managedBy": {
			job:     trainertesting.MakeTrainJob("tj", "ns"),
			wantErr: `TrainJob ns/tj has spec.managedBy ""; set it to "kueue.x-k8s.io/multikueue"`,
		},
		"Trainer's own controller": {
			job:     trainertesting.MakeTrainJob("tj", "ns").ManagedBy("trainer.kubeflow.org/trainjob-controller"),
			wantErr: `has spec.managedBy "trainer.kubeflow.org/trainjob-controller"`,
		},
		"env on the node container": {
			job:     trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy).NodeEnv("example.com/user", "A", "b"),
			wantErr: `would be refused by the worker: spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env: Forbidden`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := NewTrainJob().Check(trainJob(t, tc.job))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			var rej *Rejection
			if !errors.As(err, &rej) || !strings.Contains(rej.Message, tc.wantErr) {
				t.Fatalf("Check() = %v, want a Rejection containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestCheckRemembersAGenerationsVerdict checks a job, then checks it again
// with its spec made invalid: the verdict is the remembered one only while
// the generation and the UID are the same.
func TestCheckRemembersAGenerationsVerdict(t *testing.T) {
	cases := map[string]struct {
		uid        types.UID
		generation int64
		wantErr    bool
	}{
		"the same generation: the remembered verdict": {uid: "u1", generation: 1},
		"a later generation: checked again":           {uid: "u1", generation: 2, wantErr: true},
		"another job of the same generation":          {uid: "u2", generation: 1, wantErr: true},
		"no UID: never remembered":                    {generation: 1, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := NewTrainJob()
			first := trainJob(t, trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy))
			first.SetUID("u1")
			first.SetGeneration(1)
			if tc.uid == "" {
				first.SetUID("")
			}
			if err := a.Check(first); err != nil {
				t.Fatalf("Check() of the valid job = %v, want nil", err)
			}
			second := trainJob(t, trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy).NodeEnv("example.com/user", "A", "b"))
			second.SetUID(tc.uid)
			second.SetGeneration(tc.generation)
			var rej *Rejection
			if got := errors.As(a.Check(second), &rej); got != tc.wantErr {
				t.Errorf("Check() of the changed job rejected it: %v, want %v", got, tc.wantErr)
			}
		})
	}
}

func TestStatusPatch(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "MyJob"}
	obj := func(status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetGroupVersionKind(gvk)
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	conds := []any{map[string]any{"type": "Complete", "status": "True"}}
	cases := map[string]struct {
		gvk    schema.GroupVersionKind
		fields []string
		local  map[string]any
		remote map[string]any
		want   string
	}{
		"in sync": {
			local:  map[string]any{"phase": "Running"},
			remote: map[string]any{"phase": "Running"},
		},
		"whole status copied, stale fields removed": {
			local:  map[string]any{"phase": "Running", "startTime": "t0"},
			remote: map[string]any{"phase": "Done", "conditions": conds},
			want:   `{"status":{"conditions":[{"status":"True","type":"Complete"}],"phase":"Done","startTime":null}}`,
		},
		"a batch Job's uncounted pods stay on the worker": {
			gvk:    schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
			local:  map[string]any{"active": int64(1)},
			remote: map[string]any{"succeeded": int64(1), "uncountedTerminatedPods": map[string]any{"succeeded": []any{"uid"}}},
			want:   `{"status":{"active":null,"ready":null,"succeeded":1,"terminating":null}}`,
		},
		"a batch Job's activity is cleared even where the cached manager job does not show it": {
			gvk:    schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
			local:  map[string]any{},
			remote: map[string]any{"succeeded": int64(1), "ready": int64(0), "conditions": conds},
			want:   `{"status":{"active":null,"conditions":[{"status":"True","type":"Complete"}],"ready":0,"succeeded":1,"terminating":null}}`,
		},
		"a batch Job in sync needs no patch, whatever its activity": {
			gvk:    schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
			local:  map[string]any{"succeeded": int64(1)},
			remote: map[string]any{"succeeded": int64(1)},
		},
		"only the listed fields": {
			fields: []string{"conditions"},
			local:  map[string]any{"phase": "Running"},
			remote: map[string]any{"phase": "Done", "conditions": conds},
			want:   `{"status":{"conditions":[{"status":"True","type":"Complete"}]}}`,
		},
		"nested keys gone on the worker are removed on the manager": {
			local:  map[string]any{"counts": map[string]any{"succeeded": []any{"uid"}, "failed": int64(0)}},
			remote: map[string]any{"counts": map[string]any{"failed": int64(0)}},
			want:   `{"status":{"counts":{"succeeded":null}}}`,
		},
		"no remote status yet": {
			fields: []string{"conditions"},
			local:  nil,
			remote: nil,
		},
		"a fresh copy without status empties the manager's status, removing it": {
			local:  map[string]any{"conditions": conds},
			remote: nil,
			want:   `{"status":null}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kind := gvk
			if !tc.gvk.Empty() {
				kind = tc.gvk
			}
			a := New(Kind{GVK: kind, ManagedByPath: "spec.managedBy", ManagedByValue: "x", StatusFields: tc.fields})
			got, err := a.StatusPatch(obj(tc.local), obj(tc.remote))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("StatusPatch() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBatchJobRemoteCopy(t *testing.T) {
	uidLabels := map[string]any{"batch.kubernetes.io/controller-uid": "u1", "controller-uid": "u1", "batch.kubernetes.io/job-name": "j", "app": "x"}
	job := func(manual bool) *unstructured.Unstructured {
		spec := map[string]any{
			"managedBy": "courier.dev/dispatcher",
			"selector":  map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "u1"}},
			"template":  map[string]any{"metadata": map[string]any{"labels": uidLabels}, "spec": map[string]any{}},
		}
		if manual {
			spec["manualSelector"] = true
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "j", "namespace": "ns"}, "spec": spec}}
	}
	a := New(Kind{GVK: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, ManagedByPath: "spec.managedBy", ManagedByValue: "courier.dev/dispatcher"})
	cases := map[string]struct {
		manual       bool
		wantSelector bool
		wantLabels   map[string]any
	}{
		"the generated selector and its labels are dropped": {
			wantLabels: map[string]any{"batch.kubernetes.io/job-name": "j", "app": "x"},
		},
		"a manual selector is the user's and stays": {
			manual: true, wantSelector: true, wantLabels: uidLabels,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := a.RemoteCopy(job(tc.manual), Destination{Workload: "wl", Origin: "org"})
			if err != nil {
				t.Fatal(err)
			}
			_, hasSelector, _ := unstructured.NestedMap(got.Object, "spec", "selector")
			if hasSelector != tc.wantSelector {
				t.Errorf("selector present = %v, want %v", hasSelector, tc.wantSelector)
			}
			labels, _, _ := unstructured.NestedMap(got.Object, "spec", "template", "metadata", "labels")
			if diff := cmp.Diff(tc.wantLabels, labels); diff != "" {
				t.Errorf("template labels (-want +got):\n%s", diff)
			}
			if _, found, _ := unstructured.NestedString(got.Object, "spec", "managedBy"); found {
				t.Error("managedBy reached the worker copy")
			}
			// A Job's TTL may delete it before its status is mirrored.
			if diff := cmp.Diff([]string{"courier.dev/dispatcher"}, got.GetFinalizers()); diff != "" {
				t.Errorf("finalizers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClearActivityPatch(t *testing.T) {
	obj := func(apiVersion, kind string, status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "status": status}}
	}
	cases := map[string]struct {
		a    Adapter
		job  *unstructured.Unstructured
		want string
	}{
		"TrainJob: its JobSet's job counts go": {
			a:    NewTrainJob(),
			job:  obj("trainer.kubeflow.org/v1alpha1", "TrainJob", map[string]any{"jobsStatus": []any{map[string]any{"name": "node", "active": int64(1)}}, "conditions": []any{}}),
			want: `{"status":{"jobsStatus":null}}`,
		},
		"batch Job: active and ready go": {
			a:    New(Kind{GVK: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}}),
			job:  obj("batch/v1", "Job", map[string]any{"active": int64(2), "ready": int64(1), "succeeded": int64(1)}),
			want: `{"status":{"active":null,"ready":null}}`,
		},
		"TrainJob with only job counts: the status goes, never left as {}": {
			a:    NewTrainJob(),
			job:  obj("trainer.kubeflow.org/v1alpha1", "TrainJob", map[string]any{"jobsStatus": []any{map[string]any{"name": "node", "active": int64(1)}}}),
			want: `{"status":null}`,
		},
		"TrainJob that ended: its final job counts stay (a worker lost after the job completed)": {
			a: NewTrainJob(),
			job: obj("trainer.kubeflow.org/v1alpha1", "TrainJob", map[string]any{
				"jobsStatus": []any{map[string]any{"name": "node", "active": int64(0), "succeeded": int64(1)}},
				"conditions": []any{map[string]any{"type": "Complete", "status": "True", "reason": "JobsCompleted", "message": "done"}}}),
		},
		"batch Job that ended: its counts stay": {
			a: New(Kind{GVK: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}}),
			job: obj("batch/v1", "Job", map[string]any{"ready": int64(0), "succeeded": int64(1),
				"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}),
		},
		"nothing active: no patch": {
			a:   NewTrainJob(),
			job: obj("trainer.kubeflow.org/v1alpha1", "TrainJob", map[string]any{"conditions": []any{}}),
		},
		"a kind without known activity fields: no patch": {
			a:   New(Kind{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "MyJob"}}),
			job: obj("example.com/v1", "MyJob", map[string]any{"active": int64(1)}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.a.ClearActivityPatch(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("ClearActivityPatch() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	cond := func(typ, status, msg string) map[string]any {
		return map[string]any{"type": typ, "status": status, "message": msg}
	}
	cases := map[string]struct {
		conditions []any
		want       Outcome
	}{
		"running":                    {conditions: []any{cond("Created", "True", "")}},
		"a TrainJob or Job complete": {conditions: []any{cond("Complete", "True", "done")}, want: Outcome{Finished: true, Message: "done"}},
		"a JobSet completed":         {conditions: []any{cond("Completed", "True", "")}, want: Outcome{Finished: true}},
		"failed":                     {conditions: []any{cond("Complete", "False", ""), cond("Failed", "True", "oom")}, want: Outcome{Finished: true, Failed: true, Message: "oom"}},
		"no status":                  {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := &unstructured.Unstructured{Object: map[string]any{}}
			if tc.conditions != nil {
				job.Object["status"] = map[string]any{"conditions": tc.conditions}
			}
			if diff := cmp.Diff(tc.want, NewTrainJob().Outcome(job)); diff != "" {
				t.Errorf("Outcome() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeletePropagation(t *testing.T) {
	cases := map[string]struct {
		a          Adapter
		want       metav1.DeletionPropagation
		wantRunner *schema.GroupVersionKind
	}{
		"a batch Job goes after its pods": {
			a:    New(Kind{GVK: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}}),
			want: metav1.DeletePropagationForeground,
		},
		"any other external kind too": {
			a:    New(Kind{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}}),
			want: metav1.DeletePropagationForeground,
		},
		"a TrainJob, whose JobSet Trainer makes again while it is deleted, goes at once, and its JobSet after": {
			a:          NewTrainJob(),
			want:       metav1.DeletePropagationBackground,
			wantRunner: &schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.a.DeletePropagation()); diff != "" {
				t.Errorf("DeletePropagation() (-want +got):\n%s", diff)
			}
			var got *schema.GroupVersionKind
			if gvk, ok := tc.a.Runner(); ok {
				got = &gvk
			}
			if diff := cmp.Diff(tc.wantRunner, got); diff != "" {
				t.Errorf("Runner() (-want +got):\n%s", diff)
			}
		})
	}
}
