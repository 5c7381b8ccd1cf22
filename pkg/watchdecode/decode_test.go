package watchdecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

var (
	workloadGVK = kueue.SchemeGroupVersion.WithKind("Workload")
	trainJobGVK = schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"}
)

func testScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := kueue.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func typedSerializer(s *runtime.Scheme) runtime.NegotiatedSerializer {
	return serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(s)}
}

func unstructuredSerializer() runtime.NegotiatedSerializer {
	return dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
}

// clientGoDecoder is the watch.Decoder rest.Request.Watch builds for a JSON
// response.
func clientGoDecoder(t testing.TB, ns runtime.NegotiatedSerializer, gv schema.GroupVersion, body io.ReadCloser) watch.Decoder {
	objectDecoder, streamSerializer, framer, err := runtime.NewClientNegotiator(ns, gv).StreamDecoder(runtime.ContentTypeJSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	return restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(body), streamSerializer), objectDecoder)
}

// events runs a watcher to its end, as the reflector would read it.
func events(t testing.TB, d watch.Decoder) []watch.Event {
	w := watch.NewStreamWatcher(d, apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding"))
	var out []watch.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatal("watch did not end")
		}
	}
}

func workload(name, rv string) *kueue.Workload {
	return &kueue.Workload{
		TypeMeta: metav1.TypeMeta{APIVersion: workloadGVK.GroupVersion().String(), Kind: "Workload"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a", ResourceVersion: rv, UID: "2c6a2b4e-1f7e-4d7b-9a51-5f1f0f0f0f0f",
			Generation:        3,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)),
			Labels:            map[string]string{"courier.dev/origin": "manager-1", "kueue.x-k8s.io/job-uid": "abc"},
			Annotations:       map[string]string{"note": "quote \" backslash \\ unicode \u00e9 \u2028 tab\t"},
			Finalizers:        []string{"kueue.x-k8s.io/resource-in-use"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Name: name, UID: "u-1",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kueue", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "kueue.x-k8s.io/v1beta2",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:queueName":{}}}`),
			}},
		},
		Spec: kueue.WorkloadSpec{
			QueueName: "team-a-queue",
			Priority:  ptr.To[int32](100),
			PodSets: []kueue.PodSet{{
				Name:  "node",
				Count: 4,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "trainer", Image: "pytorch:2", Command: []string{"torchrun", "train.py"},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("4Gi")}},
					}},
				}},
			}},
		},
		Status: kueue.WorkloadStatus{
			Conditions: []metav1.Condition{{
				Type: "QuotaReserved", Status: metav1.ConditionTrue, Reason: "QuotaReserved",
				Message:            "Quota reserved in ClusterQueue cq",
				LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 24, 7, 0, 1, 0, time.UTC)),
			}},
			Admission: &kueue.Admission{
				ClusterQueue: "cq",
				PodSetAssignments: []kueue.PodSetAssignment{{
					Name: "node", Count: ptr.To[int32](4),
					ResourceUsage: corev1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("16Gi")},
				}},
			},
			AdmissionChecks: []kueue.AdmissionCheckState{{
				Name: "courier", State: kueue.CheckStatePending, Message: "waiting",
				LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 24, 7, 0, 1, 0, time.UTC)),
			}},
		},
	}
}

func trainJob(name, rv string) map[string]any {
	return map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "TrainJob",
		"metadata": map[string]any{
			"name": name, "namespace": "team-a", "resourceVersion": rv, "generation": 2,
			"labels":      map[string]any{"courier.dev/origin": "manager-1"},
			"annotations": map[string]any{"escaped": "a \"b\" c\\", "empty": ""},
			"managedFields": []any{
				map[string]any{"manager": "trainer", "operation": "Update", "apiVersion": "trainer.kubeflow.org/v1alpha1",
					"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:status": map[string]any{"f:conditions": map[string]any{}}}},
				map[string]any{"manager": "odd \"}],{[\\", "operation": "Apply", "fieldsV1": map[string]any{}},
			},
			"finalizers": []any{"courier.dev/after-managed-fields"},
		},
		"spec": map[string]any{
			"runtimeRef": map[string]any{"name": "torch-distributed", "kind": "ClusterTrainingRuntime"},
			"trainer": map[string]any{
				"numNodes":         2,
				"resourcesPerNode": map[string]any{"limits": map[string]any{"cpu": "2", "memory": "4Gi"}},
				"command":          []any{"python", "-c", "print('{}[]')"},
				"env":              []any{map[string]any{"name": "BIG", "value": "x"}},
			},
			"big":      json.Number("9007199254740993"), // 2^53+1: lost if read as float64
			"negative": json.Number("-9223372036854775808"),
			"float":    json.Number("1.5"),
			"exp":      json.Number("1e3"),
			"nothing":  nil,
			"flag":     true,
			"deep":     map[string]any{"a": []any{[]any{map[string]any{"b": []any{}}}, map[string]any{}}},
		},
		"status": map[string]any{
			"conditions": []any{map[string]any{"type": "Created", "status": "True", "reason": "JobsCreated", "lastTransitionTime": "2026-11-24T07:00:00Z"}},
			"jobsStatus": []any{map[string]any{"name": "node", "ready": 1, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0}},
		},
	}
}

func event(t testing.TB, typ watch.EventType, obj any) string {
	b, err := json.Marshal(map[string]any{"type": typ, "object": obj})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func status410() *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Message: "too old resource version: 1 (2000)", Reason: metav1.StatusReasonExpired, Code: 410,
	}
}

func bookmark(gvk schema.GroupVersionKind, rv string) map[string]any {
	return map[string]any{
		"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
		"metadata": map[string]any{"resourceVersion": rv, "creationTimestamp": nil, "annotations": map[string]any{"k8s.io/initial-events-end": "true"}},
	}
}

func TestDecoderMatchesClientGo(t *testing.T) {
	s := testScheme(t)
	big := workload("big", "9")
	big.Annotations["blob"] = strings.Repeat(`x"\y`, 40000) // ~160 KiB: short buffers and buffer growth
	typedStream := func(t testing.TB) string {
		return event(t, watch.Added, workload("w1", "1")) +
			event(t, watch.Modified, workload("w1", "2")) +
			event(t, watch.Bookmark, bookmark(workloadGVK, "3")) +
			event(t, watch.Added, big) +
			event(t, watch.Deleted, workload("w1", "4"))
	}
	unstructuredStream := func(t testing.TB) string {
		return event(t, watch.Added, trainJob("t1", "1")) +
			event(t, watch.Modified, trainJob("t1", "2")) +
			event(t, watch.Bookmark, bookmark(trainJobGVK, "3")) +
			event(t, watch.Deleted, trainJob("t1", "4"))
	}
	cases := map[string]struct {
		unstructured bool
		stream       func(t testing.TB) string
		oneByte      bool // deliver the body one byte per read
		wantFallback bool // not all events take the fast path
	}{
		"typed workload events":           {stream: typedStream},
		"typed, one byte per read":        {stream: typedStream, oneByte: true},
		"unstructured trainjob events":    {unstructured: true, stream: unstructuredStream},
		"unstructured, one byte per read": {unstructured: true, stream: unstructuredStream, oneByte: true},
		"error event with a Status": {
			stream: func(t testing.TB) string {
				return event(t, watch.Added, workload("w1", "1")) + event(t, watch.Error, status410())
			},
		},
		"unstructured error event": {
			unstructured: true,
			stream: func(t testing.TB) string {
				return event(t, watch.Added, trainJob("t1", "1")) + event(t, watch.Error, status410())
			},
		},
		"truncated stream": {
			stream: func(t testing.TB) string {
				s := event(t, watch.Added, workload("w1", "1")) + event(t, watch.Modified, workload("w1", "2"))
				return s[:len(s)-40]
			},
		},
		"truncated unstructured stream": {
			unstructured: true,
			stream: func(t testing.TB) string {
				s := event(t, watch.Added, trainJob("t1", "1")) + event(t, watch.Modified, trainJob("t1", "2"))
				return s[:len(s)-200]
			},
		},
		"truncated inside a string": {
			stream: func(t testing.TB) string {
				s := event(t, watch.Added, workload("w1", "1"))
				return s[:strings.Index(s, "backslash")]
			},
		},
		"pretty-printed events with whitespace": {
			stream: func(t testing.TB) string {
				var b bytes.Buffer
				if err := json.Indent(&b, []byte(event(t, watch.Added, workload("w1", "1"))), " ", "\t"); err != nil {
					t.Fatal(err)
				}
				return "\n \r\n" + b.String() + "  " + event(t, watch.Modified, workload("w1", "2")) + "\n\n"
			},
		},
		"keys in the other order": {
			stream: func(t testing.TB) string {
				w, _ := json.Marshal(workload("w1", "1"))
				return `{"object":` + string(w) + `,"type":"ADDED"}`
			},
		},
		"unknown envelope key": {
			wantFallback: true,
			stream: func(t testing.TB) string {
				w, _ := json.Marshal(workload("w1", "1"))
				return `{"type":"ADDED","object":` + string(w) + `,"extra":[1,{"a":"}"}]}` + "\n" + event(t, watch.Modified, workload("w1", "2"))
			},
		},
		"escaped type": {
			wantFallback: true,
			stream: func(t testing.TB) string {
				w, _ := json.Marshal(workload("w1", "1"))
				return `{"type":"ADD\u0045D","object":` + string(w) + `}`
			},
		},
		"invalid event type": {
			stream: func(t testing.TB) string { return event(t, "NOPE", workload("w1", "1")) },
		},
		"object of another kind": {
			wantFallback: true,
			stream: func(t testing.TB) string {
				pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}
				return event(t, watch.Added, pod) + event(t, watch.Added, workload("w1", "1"))
			},
		},
		"unstructured object of another kind": {
			unstructured: true, wantFallback: true,
			stream: func(t testing.TB) string {
				other := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "j"}}
				return event(t, watch.Added, other)
			},
		},
		"unstructured with a case-variant kind key": {
			unstructured: true, wantFallback: true,
			stream: func(t testing.TB) string {
				u := trainJob("t1", "1")
				u["KIND"] = "Other"
				return event(t, watch.Added, u)
			},
		},
		"typed with a case-variant kind key": {
			wantFallback: true,
			stream: func(t testing.TB) string {
				w, _ := json.Marshal(workload("w1", "1"))
				return `{"type":"ADDED","object":` + string(w[:len(w)-1]) + `,"KIND":"Pod"}}`
			},
		},
		"typed with a Kelvin-sign kind key": {
			wantFallback: true,
			stream: func(t testing.TB) string {
				w, _ := json.Marshal(workload("w1", "1"))
				return "{\"type\":\"ADDED\",\"object\":" + string(w[:len(w)-1]) + ",\"\u212aind\":\"Pod\"}}"
			},
		},
		"typed with an escaped top-level key": {
			wantFallback: true,
			stream: func(t testing.TB) string {
				w, _ := json.Marshal(workload("w1", "1"))
				return `{"type":"ADDED","object":` + string(w[:len(w)-1]) + `,"\u006bind":"Pod"}}`
			},
		},
		"nested case-variant keys stay on the fast path": {
			stream: func(t testing.TB) string {
				u := trainJob("t1", "1")
				u["spec"].(map[string]any)["Kind"] = "x"
				return event(t, watch.Added, u)
			},
			unstructured: true,
		},
		"missing kind": {
			unstructured: true, wantFallback: true,
			stream: func(t testing.TB) string {
				u := trainJob("t1", "1")
				delete(u, "kind")
				return event(t, watch.Added, u)
			},
		},
		"invalid JSON inside the object": {
			wantFallback: true,
			stream: func(t testing.TB) string {
				return `{"type":"ADDED","object":{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload","metadata":{"name":tru}}}` + "\n"
			},
		},
		"invalid JSON inside an unstructured object": {
			unstructured: true, wantFallback: true,
			stream: func(t testing.TB) string {
				return event(t, watch.Added, trainJob("t1", "1")) + `{"type":"ADDED","object":{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","a":[1,2,]}}`
			},
		},
		"mismatched brackets": {
			wantFallback: true,
			stream: func(t testing.TB) string {
				return event(t, watch.Added, workload("w1", "1")) + `{"type":"ADDED","object":{"a":[1}]}`
			},
		},
		"a top-level value that is not an object": {
			wantFallback: true,
			stream: func(t testing.TB) string {
				return event(t, watch.Added, workload("w1", "1")) + "42 " + event(t, watch.Added, workload("w1", "2"))
			},
		},
		"garbage after an event": {
			wantFallback: true,
			stream:       func(t testing.TB) string { return event(t, watch.Added, workload("w1", "1")) + "}" },
		},
		"null object": {
			wantFallback: true,
			stream:       func(t testing.TB) string { return `{"type":"ADDED","object":null}` },
		},
		"empty stream":    {stream: func(testing.TB) string { return "" }},
		"only whitespace": {stream: func(testing.TB) string { return " \n\t " }},
	}
	for name, tc := range cases {
		// Each case again with managed fields dropped: the events must be
		// client-go's, with StripManagedFields run on their objects.
		for _, drop := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/dropManagedFields=%t", name, drop), func(t *testing.T) {
				ns, gvk := typedSerializer(s), workloadGVK
				var d *Decoder
				var err error
				if tc.unstructured {
					ns, gvk = unstructuredSerializer(), trainJobGVK
					d, err = NewUnstructuredDecoder(ns, gvk)
				} else {
					d, err = NewTypedDecoder(ns, s, gvk)
				}
				if err != nil {
					t.Fatal(err)
				}
				if drop {
					d.DropManagedFields()
				}
				stream := tc.stream(t)
				body := func() io.ReadCloser {
					var r io.Reader = strings.NewReader(stream)
					if tc.oneByte {
						r = iotest.OneByteReader(r)
					}
					return io.NopCloser(r)
				}
				want := events(t, clientGoDecoder(t, ns, gvk.GroupVersion(), body()))
				fast := 0
				d.decode = countCalls(d.decode, &fast)
				if drop {
					d.decode = refuseManagedFields(t, d.decode)
				}
				got := events(t, d.NewEventDecoder(body()))
				if drop {
					// What the cache's transform does to every object,
					// whichever decoder it came from.
					stripAll(t, want)
					stripAll(t, got)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("events differ from client-go's (-client-go +watchdecode):\n%s", diff)
				}
				if len(want) == 0 && len(stream) > 0 && strings.TrimSpace(stream) != "" && !strings.Contains(name, "truncated") {
					t.Errorf("client-go decoded no events: the case tests nothing")
				}
				if !tc.wantFallback && fast == 0 && len(want) > 0 && want[0].Type != watch.Error {
					t.Errorf("the fast path decoded nothing")
				}
			})
		}
	}
}

// refuseManagedFields fails the test if the fast path is handed an object
// with managed fields to decode.
func refuseManagedFields(t *testing.T, f func([]byte) (runtime.Object, bool)) func([]byte) (runtime.Object, bool) {
	return func(b []byte) (runtime.Object, bool) {
		if _, cut, ok := skipObject(b, 0); ok && !cut.empty() {
			t.Errorf("the fast path decoded managed fields: %.200s", b)
		}
		return f(b)
	}
}

func stripAll(t *testing.T, evs []watch.Event) {
	for _, ev := range evs {
		if _, err := StripManagedFields()(ev.Object); err != nil {
			t.Fatal(err)
		}
	}
}

func countCalls(f func([]byte) (runtime.Object, bool), n *int) func([]byte) (runtime.Object, bool) {
	return func(b []byte) (runtime.Object, bool) {
		obj, ok := f(b)
		if ok {
			*n++
		}
		return obj, ok
	}
}

func TestParseEnvelope(t *testing.T) {
	cases := map[string]struct {
		in     string
		typ    string
		object string
		wantOK bool
		// the object with the bytes parseEnvelope says to cut removed
		withoutManagedFields string
	}{
		"plain":           {in: `{"type":"ADDED","object":{"a":"}"}}`, typ: "ADDED", object: `{"a":"}"}`, wantOK: true},
		"spaces":          {in: ` { "object" : {"a":["\\\"",{}]} , "type" : "DELETED" } `, typ: "DELETED", object: `{"a":["\\\"",{}]}`, wantOK: true},
		"escaped quote":   {in: `{"type":"ADDED","object":{"a":"x\"}"}}`, typ: "ADDED", object: `{"a":"x\"}"}`, wantOK: true},
		"duplicate type":  {in: `{"type":"ADDED","type":"DELETED","object":{}}`},
		"missing object":  {in: `{"type":"ADDED"}`},
		"other key":       {in: `{"type":"ADDED","object":{},"x":1}`},
		"capitalised key": {in: `{"Type":"ADDED","object":{}}`},
		"trailing bytes":  {in: `{"type":"ADDED","object":{}} x`},
		"unclosed object": {in: `{"type":"ADDED","object":{"a":1}`},
		"non-ASCII type":  {in: "{\"type\":\"ADD\u00e9\",\"object\":{}}"},
		"array object":    {in: `{"type":"ADDED","object":[]}`},
		"managed fields": {
			in:  ` {"type":"ADDED", "object":{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{}}}`,
			typ: "ADDED", object: `{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{}}`, wantOK: true,
			withoutManagedFields: `{"metadata":{"name":"a"},"spec":{}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			typ, object, cut, ok := parseEnvelope([]byte(tc.in))
			want := tc.withoutManagedFields
			if want == "" {
				want = tc.object
			}
			if diff := cmp.Diff([]any{tc.wantOK, tc.typ, tc.object, want}, []any{ok, typ, string(object), string(cut.apply(object, nil))}); diff != "" {
				t.Errorf("parseEnvelope(%s) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func ExampleNewCache() {
	// In a cache.Options literal, or as ctrl.Options.NewCache:
	//   informers, err := watchdecode.NewCache(cfg, cache.Options{...})
	fmt.Println("see Install")
	// Output: see Install
}
