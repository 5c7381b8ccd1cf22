package webhook

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
)

func TestSetPatch(t *testing.T) {
	const value = "courier.dev/dispatcher"
	cases := map[string]struct {
		obj     string
		path    []string
		want    string // the object once the patch is applied
		wantErr bool
	}{
		"a field not set": {
			obj:  `{"spec":{"suspend":true}}`,
			path: []string{"spec", "managedBy"},
			want: `{"spec":{"suspend":true,"managedBy":"courier.dev/dispatcher"}}`,
		},
		"a field set to the kind's own controller is replaced": {
			obj:  `{"spec":{"managedBy":"trainer.kubeflow.org/trainjob-controller"}}`,
			path: []string{"spec", "managedBy"},
			want: `{"spec":{"managedBy":"courier.dev/dispatcher"}}`,
		},
		"no spec": {
			obj:  `{"metadata":{"name":"a"}}`,
			path: []string{"spec", "managedBy"},
			want: `{"metadata":{"name":"a"},"spec":{"managedBy":"courier.dev/dispatcher"}}`,
		},
		"a null spec": {
			obj:  `{"spec":null}`,
			path: []string{"spec", "managedBy"},
			want: `{"spec":{"managedBy":"courier.dev/dispatcher"}}`,
		},
		"a deeper path whose middle is missing": {
			obj:  `{"spec":{"x":1}}`,
			path: []string{"spec", "control", "managedBy"},
			want: `{"spec":{"x":1,"control":{"managedBy":"courier.dev/dispatcher"}}}`,
		},
		"keys a JSON pointer escapes": {
			obj:  `{"spec":{"a/b":{}}}`,
			path: []string{"spec", "a/b", "c~d"},
			want: `{"spec":{"a/b":{"c~d":"courier.dev/dispatcher"}}}`,
		},
		"a step through a value that is not an object": {
			obj:     `{"spec":"x"}`,
			path:    []string{"spec", "managedBy"},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var obj map[string]any
			if err := json.Unmarshal([]byte(tc.obj), &obj); err != nil {
				t.Fatal(err)
			}
			op, err := setPatch(obj, tc.path, value)
			if (err != nil) != tc.wantErr {
				t.Fatalf("setPatch() error = %v, want error: %t", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			raw, err := json.Marshal([]any{op})
			if err != nil {
				t.Fatal(err)
			}
			patch, err := jsonpatch.DecodePatch(raw)
			if err != nil {
				t.Fatalf("decoding %s: %v", raw, err)
			}
			got, err := patch.Apply([]byte(tc.obj))
			if err != nil {
				t.Fatalf("applying %s: %v", raw, err)
			}
			var gotObj, wantObj any
			if err := json.Unmarshal(got, &gotObj); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &wantObj); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantObj, gotObj); diff != "" {
				t.Errorf("patched object (-want +got):\n%s", diff)
			}
		})
	}
}
