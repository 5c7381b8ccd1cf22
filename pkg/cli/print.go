package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// reportGroupVersion names the reports in JSON and YAML: cli-runtime's
// printers require a kind, and it tells a script what it reads.
var reportGroupVersion = schema.GroupVersion{Group: "kubectl.courier.dev", Version: "v1alpha1"}

// report is a command's result. Its json tags are the stable interface
// for scripts (-o json, yaml, jsonpath, go-template); its human view, the
// default and -o wide, is for people and may change.
type report interface {
	runtime.Object
	// human writes the view for people, printing its tables with out.
	human(w io.Writer, out *output) error
	// named are the objects -o name names: the job, or the workers.
	named() []runtime.Object
}

// Output formats besides cli-runtime's.
const (
	outputHuman = ""
	outputWide  = "wide"
	outputName  = "name"
)

// output is how a command prints, from -o, --no-headers and -A.
type output struct {
	format        string
	noHeaders     bool
	allNamespaces bool
	now           time.Time
}

// printFlags are cli-runtime's printers for format: json, yaml, name,
// jsonpath=..., go-template=... and their -file variants.
func printFlags(format *string) *genericclioptions.PrintFlags {
	pf := genericclioptions.NewPrintFlags("")
	pf.OutputFormat = format
	return pf
}

// check refuses a format before anything is read.
func (o *output) check() error {
	if o.format == outputHuman || o.format == outputWide {
		return nil
	}
	if _, err := printFlags(&o.format).ToPrinter(); err != nil {
		if genericclioptions.IsNoCompatiblePrinterError(err) {
			formats := append([]string{outputWide}, printFlags(&o.format).AllowedFormats()...)
			return fmt.Errorf("--output %q is not a format kubectl courier prints; use one of %s", o.format, strings.Join(formats, ", "))
		}
		return fmt.Errorf("--output %q: %w", o.format, err)
	}
	return nil
}

// print writes a report in the format checked by check.
func (o *output) print(w io.Writer, r report) error {
	if o.format == outputHuman || o.format == outputWide {
		return r.human(w, o)
	}
	p, err := printFlags(&o.format).ToPrinter()
	if err != nil {
		return err
	}
	r.GetObjectKind().SetGroupVersionKind(reportGroupVersion.WithKind(reportKind(r)))
	if o.format != outputName {
		return p.PrintObj(r, w)
	}
	named := r.named()
	if len(named) == 0 {
		return errors.New("-o name: this command names no object; use -o json or yaml")
	}
	for _, obj := range named {
		if err := p.PrintObj(obj, w); err != nil {
			return err
		}
	}
	return nil
}

// table prints rows with cli-runtime's table printer: headers unless
// --no-headers, the columns of priority 1 with -o wide, and a NAMESPACE
// column first with -A, from each row's object.
func (o *output) table(w io.Writer, t *metav1.Table) error {
	return printers.NewTablePrinter(printers.PrintOptions{
		NoHeaders:     o.noHeaders,
		Wide:          o.format == outputWide,
		WithNamespace: o.allNamespaces,
	}).PrintObj(t, w)
}

// columns defines table columns: those of wide show with -o wide only.
func columns(names []string, wide ...string) []metav1.TableColumnDefinition {
	var out []metav1.TableColumnDefinition
	for _, n := range names {
		out = append(out, metav1.TableColumnDefinition{Name: n, Type: "string"})
	}
	for _, n := range wide {
		out = append(out, metav1.TableColumnDefinition{Name: n, Type: "string", Priority: 1})
	}
	return out
}

// tableRow is one row of cells, about obj (for its namespace with -A).
func tableRow(obj runtime.Object, cells ...any) metav1.TableRow {
	return metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: obj}}
}

// detail writes a block of "KEY:" lines, aligned, as kubectl describe does.
type detail struct{ tw *tabwriter.Writer }

func newDetail(w io.Writer) detail { return detail{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)} }

func (f detail) row(cells ...string) { fmt.Fprintln(f.tw, strings.Join(cells, "\t")) }

func (f detail) flush() error { return f.tw.Flush() }

// object names a Kubernetes object for -o name and for the namespace
// column of -A.
func object(gvk schema.GroupVersionKind, namespace, name string) runtime.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// reportKind is the kind of a report in JSON and YAML: its type's name.
func reportKind(r report) string { return reflect.TypeOf(r).Elem().Name() }

// deepCopy copies a report through JSON, for runtime.Object: reports are
// small, printed once, and always encodable.
func deepCopy[T any](in *T) *T {
	data, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("encoding a %T: %v", in, err))
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("decoding a %T: %v", in, err))
	}
	return out
}

func joinNonEmpty(sep string, parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, sep)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// oneLine keeps a table row on one line: messages and CEL may span
// several.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// age is how long ago t was, as kubectl prints ages.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}
