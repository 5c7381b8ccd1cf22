package webhook

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/courierdev/courier/pkg/watchdecode"
)

// BenchmarkAdmission measures what the TrainJob webhooks spend on one job,
// a TrainJob of the soak as the manager's API server sends it (managed
// fields of the submitter, Kueue and Courier included): the validator on
// its create and on Kueue's update that resumes it, and the defaulter's
// managedBy patch; each beside the way they worked before, decoding the
// managed fields and, for the patch, diffing the whole object.
func BenchmarkAdmission(b *testing.B) {
	raw, err := os.ReadFile("testdata/trainjob.json")
	if err != nil {
		b.Fatal(err)
	}
	var suspended map[string]any
	if err := json.Unmarshal(raw, &suspended); err != nil {
		b.Fatal(err)
	}
	if err := unstructured.SetNestedField(suspended, true, "spec", "suspend"); err != nil {
		b.Fatal(err)
	}
	unstructured.RemoveNestedField(suspended, "status")
	oldRaw, err := json.Marshal(suspended)
	if err != nil {
		b.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := trainer.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	v := &trainJobValidator{decoder: admission.NewDecoder(scheme)}
	create := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: oldRaw}}}
	update := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Update, Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: oldRaw}}}
	for name, req := range map[string]admission.Request{"validate create": create, "validate update": update} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if resp := v.Handle(b.Context(), req); !resp.Allowed {
					b.Fatalf("refused: %v", resp.Result)
				}
			}
		})
		b.Run(name+", managed fields decoded (before)", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				job := &trainer.TrainJob{}
				if err := v.decoder.DecodeRaw(req.Object, job); err != nil {
					b.Fatal(err)
				}
				var old *trainer.TrainJob
				if req.OldObject.Raw != nil {
					old = &trainer.TrainJob{}
					if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
						b.Fatal(err)
					}
				}
				if errs := ValidateTrainJob(old, job); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
	path := strings.Split("spec.managedBy", ".")
	b.Run("default managedBy: a patch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var obj map[string]any
			if err := json.Unmarshal(watchdecode.WithoutManagedFields(oldRaw), &obj); err != nil {
				b.Fatal(err)
			}
			if _, err := setPatch(obj, path, "courier.dev/dispatcher"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("default managedBy: a diff of the whole object (before)", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var obj map[string]any
			if err := json.Unmarshal(oldRaw, &obj); err != nil {
				b.Fatal(err)
			}
			if err := unstructured.SetNestedField(obj, "courier.dev/dispatcher", path...); err != nil {
				b.Fatal(err)
			}
			out, err := json.Marshal(obj)
			if err != nil {
				b.Fatal(err)
			}
			if resp := admission.PatchResponseFromRaw(oldRaw, out); !resp.Allowed {
				b.Fatal(resp.Result)
			}
		}
	})
}
