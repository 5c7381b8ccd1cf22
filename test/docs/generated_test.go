package docs

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "copy each generated file into the documents that include it")

// generatedBlock is text a document includes from a file a program wrote:
// the opening marker names the file, from the repository's root, and
// the closing marker ends the copy.
var generatedBlock = regexp.MustCompile(`(?s)(<!-- generated from (\S+): [^\n]*-->\n)(.*?)(<!-- end of generated text -->)`)

// TestGeneratedTextMatchesItsFile checks that every block of generated
// text in the README and docs/ is its file's text exactly, so that a
// figure there was written by the harness and not retyped. With -update
// it copies each file in instead.
func TestGeneratedTextMatchesItsFile(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	included := map[string][]string{}
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		text := string(data)
		var failed bool
		copied := generatedBlock.ReplaceAllStringFunc(text, func(block string) string {
			m := generatedBlock.FindStringSubmatch(block)
			file := m[2]
			included[rel] = append(included[rel], file)
			want, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Errorf("%s includes %s, which cannot be read: %v", rel, file, err)
				failed = true
				return block
			}
			if m[3] != string(want) && !*update {
				t.Errorf("%s's copy of %s differs from the file: run go test ./test/docs/ -run %s -update", rel, file, t.Name())
			}
			return m[1] + string(want) + m[4]
		})
		if *update && !failed && copied != text {
			if err := os.WriteFile(doc, []byte(copied), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The summary of make bench is the one docs/performance.md must not
	// type by hand.
	found := false
	for _, file := range included[filepath.Join("docs", "performance.md")] {
		found = found || strings.HasPrefix(file, "records/bench/") && strings.HasSuffix(file, "-glance.md")
	}
	if !found {
		t.Errorf("docs/performance.md includes no at-a-glance table of make bench (records/bench/compare-*-glance.md)")
	}
}
