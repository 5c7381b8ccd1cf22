package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRender(t *testing.T) {
	cases := map[string]struct {
		schema, values string
		wantRows       []string
		wantErr        string
	}{
		"rows in the schema's order, nested values by path": {
			schema: `{"definitions": {"port": {"type": "integer"}}, "properties": {
				"replicas": {"description": "Replicas.", "type": "integer"},
				"metrics": {"type": "object", "properties": {
					"port": {"description": "The port.", "$ref": "#/definitions/port"},
					"mode": {"description": "A | B.", "enum": ["A", "B"]}
				}},
				"rules": {"description": "Rules,\n  on two lines.", "type": "array"},
				"budget": {"description": "A budget.", "oneOf": [{"type": "integer"}, {"type": "null"}]}
			}}`,
			values: "replicas: 2\nmetrics: {port: 8443}\nrules: []\n",
			wantRows: []string{
				"| `replicas` | integer | `2` | Replicas. |",
				"| `metrics.port` | integer | `8443` | The port. |",
				"| `metrics.mode` | `A`, `B` | none | A \\| B. |",
				"| `rules` | array | `[]` | Rules, on two lines. |",
				"| `budget` | integer or null | none | A budget. |",
			},
		},
		"an undocumented value": {
			schema:  `{"properties": {"image": {"type": "object", "properties": {"tag": {"type": "string"}}}}}`,
			wantErr: "image.tag has no description in the values schema",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for file, data := range map[string]string{"values.schema.json": tc.schema, "values.yaml": tc.values} {
				if err := os.WriteFile(filepath.Join(dir, file), []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := render(dir)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("render() error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(got), header) {
				t.Errorf("the README does not start with the header")
			}
			var rows []string
			for _, line := range strings.Split(string(got), "\n") {
				if strings.HasPrefix(line, "| `") {
					rows = append(rows, line)
				}
			}
			if diff := cmp.Diff(tc.wantRows, rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

// The chart's own README is what the generator writes from its schema:
// `make manifests` writes it, and a stale one fails here too.
func TestChartREADMEIsCurrent(t *testing.T) {
	want, err := render("../../charts/courier")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../charts/courier/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("charts/courier/README.md is stale; run make manifests (-want +got):\n%s", diff)
	}
}
