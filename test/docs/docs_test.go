// Package docs holds tests that keep the project's documentation true to
// the code: the functions the architecture map names exist where it says,
// and every link between the documents resolves.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

const root = "../.."

// mapRow is one row of the architecture map: `file` | `function`.
var mapRow = regexp.MustCompile("^\\|[^|]+\\| `([^`]+)` \\| `([^`]+)` \\|$")

// TestArchitectureMapNamesFunctionsThatExist reads the table "Where each
// behaviour lives" of docs/architecture.md: each row's file must declare
// its function, a method written Type.Method.
func TestArchitectureMapNamesFunctionsThatExist(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := sectionOf(string(doc), "## Where each behaviour lives")
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		m := mapRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		file, function := m[1], m[2]
		if !declares(t, filepath.Join(root, file), function) {
			t.Errorf("docs/architecture.md maps a behaviour to %s in %s, which does not declare it", function, file)
		}
	}
	if rows < 25 {
		t.Errorf("the architecture map has %d rows, want at least 25", rows)
	}
}

// sectionOf is the text of the section of doc that starts with heading, up
// to the next heading of its level.
func sectionOf(doc, heading string) string {
	i := strings.Index(doc, heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		return rest[:j]
	}
	return rest
}

// declares reports whether the Go file declares function: a function, or
// a method written Type.Method.
func declares(t *testing.T, path, function string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Errorf("reading %s: %v", path, err)
		return false
	}
	recv, name, isMethod := strings.Cut(function, ".")
	if !isMethod {
		name, recv = recv, ""
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != name {
			continue
		}
		if receiverType(fd) == recv {
			return true
		}
	}
	return false
}

// receiverType is the name of a method's receiver type, "" for a function.
func receiverType(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// link is a Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocumentLinksResolve follows every relative link of the README and
// the documents in docs/: its file must exist and, for a link with an
// anchor into a Markdown file, that file must have the heading.
func TestDocumentLinksResolve(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(stripCode(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			rel, _ := filepath.Rel(root, doc)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !hasAnchor(t, path, anchor) {
				t.Errorf("%s links to %s, whose file has no such heading", rel, target)
			}
		}
	}
}

// fence is a fenced code block, whose brackets are not links.
var fence = regexp.MustCompile("(?s)```.*?```")

func stripCode(s string) string { return fence.ReplaceAllString(s, "") }

// hasAnchor reports whether the Markdown file has a heading whose
// GitHub-style slug is anchor.
func hasAnchor(t *testing.T, path, anchor string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(stripCode(string(data)), "\n") {
		if strings.HasPrefix(line, "#") && slug(strings.TrimLeft(line, "# ")) == anchor {
			return true
		}
	}
	return false
}

// slug is GitHub's anchor for a heading: lower case, punctuation dropped,
// spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// testName is a Go test named in a document: `TestSomething`.
var testName = regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)`")

// TestNamedTestsExist: every test a document in docs/ names, as the one
// that pins a behaviour, is a test of the project's.
func TestNamedTestsExist(t *testing.T) {
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "_output" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(data), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testName.FindAllStringSubmatch(string(data), -1) {
			if !defined[m[1]] {
				rel, _ := filepath.Rel(root, doc)
				t.Errorf("%s names the test %s, which does not exist", rel, m[1])
			}
		}
	}
}

// repoPath is a path of the repository named in a document, in backquotes.
var repoPath = regexp.MustCompile("`((?:api|cmd|config|charts|docs|e2e|hack|pkg|records|test|tools)/[A-Za-z0-9_./-]*[A-Za-z0-9_])`")

// pastPaths are the documents that tell what moved between releases, so
// they name paths that are gone on purpose.
var pastPaths = map[string]bool{"docs/upgrade.md": true}

// TestNamedPathsExist: every file or folder of the repository a document
// in docs/, or the README, names is there.
func TestNamedPathsExist(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	for _, doc := range docs {
		rel, _ := filepath.Rel(root, doc)
		if pastPaths[rel] {
			continue
		}
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range repoPath.FindAllStringSubmatch(string(data), -1) {
			path := m[1]
			if dir, name := filepath.Split(path); strings.Contains(name, ".") && unicode.IsUpper(rune(name[strings.Index(name, ".")+1])) {
				// A Go identifier, pkg/config.Load: its package must exist.
				path = dir + name[:strings.Index(name, ".")]
			}
			if parts := strings.Split(path, "/"); len(parts) > 2 && !isDir(filepath.Join(root, parts[0], parts[1])) {
				continue // Another project's path, Kueue's say.
			}
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				t.Errorf("%s names %s, which does not exist", rel, m[1])
			}
		}
	}
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
