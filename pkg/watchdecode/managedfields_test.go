package watchdecode

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestWithoutManagedFields(t *testing.T) {
	const mf = `[{"manager":"kueue","fieldsV1":{"f:status":{}}}]`
	cases := map[string]struct {
		in   string
		want string // empty: not dropped, the object is decoded whole
	}{
		"in the middle of metadata": {
			in:   `{"kind":"K","metadata":{"name":"a","managedFields":` + mf + `,"uid":"u"},"spec":{}}`,
			want: `{"kind":"K","metadata":{"name":"a","uid":"u"},"spec":{}}`,
		},
		"first in metadata": {
			in:   `{"metadata":{"managedFields":` + mf + `,"name":"a"}}`,
			want: `{"metadata":{"name":"a"}}`,
		},
		"last in metadata": {
			in:   `{"metadata":{"name":"a","managedFields":` + mf + `},"spec":{}}`,
			want: `{"metadata":{"name":"a"},"spec":{}}`,
		},
		"alone in metadata": {
			in:   `{"metadata":{"managedFields":` + mf + `}}`,
			want: `{"metadata":{}}`,
		},
		"with whitespace everywhere": {
			in:   "{ \"metadata\" : { \"name\" : \"a\" ,\n \"managedFields\" :\t" + mf + " , \"uid\":\"u\" } }",
			want: "{ \"metadata\" : { \"name\" : \"a\" ,\n  \"uid\":\"u\" } }",
		},
		"last, after whitespace": {
			in:   "{\"metadata\":{\"name\":\"a\" , \"managedFields\":" + mf + " }}",
			want: "{\"metadata\":{\"name\":\"a\" }}",
		},
		"strings that look like JSON around it": {
			in:   `{"metadata":{"annotations":{"x":"\"managedFields\":[]}"},"managedFields":[{"manager":"a \"}]\\"}],"name":"n"},"status":{"s":"{[\""}}`,
			want: `{"metadata":{"annotations":{"x":"\"managedFields\":[]}"},"name":"n"},"status":{"s":"{[\""}}`,
		},
		"managed fields only deeper down stay": {
			in: `{"metadata":{"name":"a"},"spec":{"template":{"metadata":{"managedFields":[]}}}}`,
		},
		"no metadata": {in: `{"kind":"K","spec":{}}`},
		"metadata not an object": {
			in: `{"metadata":[{"managedFields":[]}]}`,
		},
		"metadata an array of strings": {
			in: `{"metadata":["x","managedFields","y"]}`,
		},
		"a second metadata": {
			in: `{"metadata":{"managedFields":[]},"metadata":{"name":"a"}}`,
		},
		"a second managedFields": {
			in: `{"metadata":{"managedFields":[],"managedFields":[{}]}}`,
		},
		"an escaped key in metadata": {
			in:   `{"metadata":{"na\u006de":"a","managedFields":[]}}`,
			want: `{"metadata":{"na\u006de":"a"}}`,
		},
		"an escaped managedFields stays, for the cache's transform": {
			in: `{"metadata":{"managed\u0046ields":[]}}`,
		},
		// Not examined: see managedFields.
		"managed fields that are not valid JSON": {
			in:   `{"metadata":{"managedFields":[{"manager":tru}],"name":"a"}}`,
			want: `{"metadata":{"name":"a"}}`,
		},
		"null managed fields": {
			in:   `{"metadata":{"managedFields":null,"name":"a"}}`,
			want: `{"metadata":{"name":"a"}}`,
		},
		"metadata after spec": {
			in:   `{"spec":{"metadata":{"managedFields":[]}},"metadata":{"uid":"u","managedFields":[]}}`,
			want: `{"spec":{"metadata":{"managedFields":[]}},"metadata":{"uid":"u"}}`,
		},
		"truncated": {in: `{"metadata":{"managedFields":[]`},
		"empty":     {in: ``},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := withoutManagedFields([]byte(tc.in))
			if ok != (tc.want != "") {
				t.Fatalf("dropped: %t, want %t (%s)", ok, tc.want != "", got)
			}
			if diff := cmp.Diff(tc.want, string(got)); ok && diff != "" {
				t.Errorf("bytes (-want +got):\n%s", diff)
			}
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if diff := cmp.Diff(want, string(WithoutManagedFields([]byte(tc.in)))); diff != "" {
				t.Errorf("WithoutManagedFields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStripManagedFields(t *testing.T) {
	entry := metav1.ManagedFieldsEntry{Manager: "kueue", Operation: metav1.ManagedFieldsOperationUpdate}
	cases := map[string]struct {
		in, want any
	}{
		"unstructured": {
			in: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
				"name": "a", "managedFields": []any{map[string]any{"manager": "kueue"}},
			}}},
			want: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "a"}}},
		},
		"unstructured without metadata": {
			in:   &unstructured.Unstructured{Object: map[string]any{"kind": "K"}},
			want: &unstructured.Unstructured{Object: map[string]any{"kind": "K"}},
		},
		"typed": {
			in:   &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{entry}}},
			want: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		},
		"not an object": {in: "tombstone", want: "tombstone"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := StripManagedFields()(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithoutManagedFieldsFirst(t *testing.T) {
	withFields := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
			"name": "a", "managedFields": []any{map[string]any{"manager": "kueue"}},
		}}}
	}
	var seen any
	next := func(in any) (any, error) {
		seen = in.(*unstructured.Unstructured).DeepCopy()
		in.(*unstructured.Unstructured).SetLabels(map[string]string{"next": "ran"})
		return in, nil
	}
	stripped := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "a"}}}

	got, err := withoutManagedFieldsFirst(nil)(withFields())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(any(stripped), got); diff != "" {
		t.Errorf("without a transform of its own (-want +got):\n%s", diff)
	}
	got, err = withoutManagedFieldsFirst(next)(withFields())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(any(stripped), seen); diff != "" {
		t.Errorf("what the next transform was handed (-want +got):\n%s", diff)
	}
	if got.(*unstructured.Unstructured).GetLabels()["next"] != "ran" {
		t.Errorf("the next transform's result was not returned: %v", got)
	}
}
