package adapter

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
)

// Applied to from, the diff gives to, and it holds only what differs.
func TestMergeDiff(t *testing.T) {
	cases := map[string]struct {
		from, to map[string]any
		want     map[string]any
	}{
		"equal": {
			from: map[string]any{"a": int64(1), "m": map[string]any{"x": "y"}},
			to:   map[string]any{"a": int64(1), "m": map[string]any{"x": "y"}},
			want: map[string]any{},
		},
		"a value changed, one added, one removed": {
			from: map[string]any{"a": int64(1), "b": "gone"},
			to:   map[string]any{"a": int64(2), "c": true},
			want: map[string]any{"a": int64(2), "b": nil, "c": true},
		},
		"objects compared field by field": {
			from: map[string]any{"m": map[string]any{"x": "y", "k": "same", "old": "v"}},
			to:   map[string]any{"m": map[string]any{"x": "z", "k": "same"}},
			want: map[string]any{"m": map[string]any{"x": "z", "old": nil}},
		},
		"lists replaced whole": {
			from: map[string]any{"conditions": []any{map[string]any{"type": "Created", "status": "True"}}},
			to: map[string]any{"conditions": []any{
				map[string]any{"type": "Created", "status": "True"}, map[string]any{"type": "Complete", "status": "True"},
			}},
			want: map[string]any{"conditions": []any{
				map[string]any{"type": "Created", "status": "True"}, map[string]any{"type": "Complete", "status": "True"},
			}},
		},
		"a value turned into an object": {
			from: map[string]any{"v": "s"},
			to:   map[string]any{"v": map[string]any{"x": int64(1)}},
			want: map[string]any{"v": map[string]any{"x": int64(1)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := mergeDiff(tc.from, tc.to)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mergeDiff() mismatch (-want +got):\n%s", diff)
			}
			from, _ := json.Marshal(tc.from)
			patch, _ := json.Marshal(got)
			patched, err := jsonpatch.MergePatch(from, patch)
			if err != nil {
				t.Fatal(err)
			}
			to, _ := json.Marshal(tc.to)
			if !jsonpatch.Equal(patched, to) {
				t.Errorf("from patched with %s = %s, want %s", patch, patched, to)
			}
		})
	}
}
