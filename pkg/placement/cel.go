package placement

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

const (
	// costLimit bounds one evaluation, so that a policy's expression
	// cannot hold a dispatcher worker (a comprehension over a large job
	// object, say). A plain filter or score costs tens.
	costLimit = 1_000_000
	// maxExpressionLength is the CRD's MaxLength of filter and score,
	// enforced again for Programs compiled from elsewhere.
	maxExpressionLength = 4096
)

// The CEL variables, also the keys of the activation.
const (
	varCluster  = "cluster"
	varWorkload = "workload"
	varObject   = "object"
)

// env is the one environment of every policy's expressions. A cel.Env is
// immutable and safe for concurrent use, so it is built once.
var env = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		withObjectTypes(),
		cel.Variable(varCluster, cel.ObjectType(typeCluster)),
		cel.Variable(varWorkload, cel.ObjectType(typeWorkload)),
		// object is the job as unstructured content: any shape.
		cel.Variable(varObject, cel.DynType),
		// The extension libraries at the versions Kubernetes 1.36 offers
		// in its own CEL, so that what a policy writer knows from
		// validation rules works here too.
		ext.Strings(ext.StringsVersion(2)),
		ext.Lists(ext.ListsVersion(3)),
		ext.Sets(),
		cel.ParserExpressionSizeLimit(maxExpressionLength),
	)
})

// Program is a compiled CEL expression of a DispatchPolicy: a filter,
// which gives a bool, or a score, which gives a number. It is safe for
// concurrent use.
type Program struct {
	// Expression is the source, for messages.
	Expression string

	prg cel.Program
}

// CompileFilter compiles a policy's filter, which must give a bool (or dyn,
// checked when it runs). Errors are CEL's, prefixed with "filter: ".
func CompileFilter(expr string) (*Program, error) {
	p, err := compile(expr, "bool", types.BoolKind)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return p, nil
}

// CompileScore compiles a policy's score, which must give an int, a uint or
// a double (or dyn, checked when it runs). Errors are CEL's, prefixed with
// "score: ".
func CompileScore(expr string) (*Program, error) {
	p, err := compile(expr, "int, uint or double", types.IntKind, types.UintKind, types.DoubleKind)
	if err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	return p, nil
}

// varTypes are the object types of the variables whose fields checkFields
// names in its message.
var varTypes = map[string]string{varCluster: typeCluster, varWorkload: typeWorkload}

// checkFields refuses a field of cluster or workload that they do not
// have, naming it and the ones they have, which CEL's own "undefined
// field" does not; and an object of Courier's types made in the
// expression, which the interpreter could not read.
func checkFields(a *cel.Ast) error {
	root := celast.NavigateAST(a.NativeRep())
	for _, e := range celast.MatchDescendants(root, celast.KindMatcher(celast.StructKind)) {
		if name := e.AsStruct().TypeName(); objectTypes[name] != nil {
			return fmt.Errorf("%s cannot be made in an expression", name)
		}
	}
	for _, e := range celast.MatchDescendants(root, celast.KindMatcher(celast.SelectKind)) {
		sel := e.AsSelect()
		if sel.Operand().Kind() != celast.IdentKind {
			continue
		}
		name := sel.Operand().AsIdent()
		known, ok := fieldNames(varTypes[name])
		if ok && !slices.Contains(known, sel.FieldName()) {
			return fmt.Errorf("%s has no field %q; it has %s", name, sel.FieldName(), strings.Join(known, ", "))
		}
	}
	return nil
}

// compile type-checks expr and requires it to give one of the kinds, or
// dyn (a field of the job), which is checked when it runs.
func compile(expr, want string, kinds ...types.Kind) (*Program, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	// Fields are checked before types, so that a misspelt field of
	// cluster or workload gets checkFields' message rather than CEL's.
	parsed, iss := e.Parse(expr)
	if err := iss.Err(); err != nil {
		return nil, err
	}
	if err := checkFields(parsed); err != nil {
		return nil, err
	}
	ast, iss := e.Check(parsed)
	if err := iss.Err(); err != nil {
		return nil, err
	}
	out := ast.OutputType()
	if k := out.Kind(); k != types.DynKind && !slices.Contains(kinds, k) {
		return nil, fmt.Errorf("gives %s, want %s", out, want)
	}
	prg, err := e.Program(ast, cel.CostLimit(costLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, err
	}
	return &Program{Expression: expr, prg: prg}, nil
}

// Filter evaluates a filter on one cluster.
func (p *Program) Filter(c Cluster, w Workload) (bool, error) {
	return p.evalBool(newVars(c, newWorkloadVars(w, newGang(w).total)))
}

// Score evaluates a score on one cluster.
func (p *Program) Score(c Cluster, w Workload) (float64, error) {
	return p.evalNumber(newVars(c, newWorkloadVars(w, newGang(w).total)))
}

func (p *Program) evalBool(v *vars) (bool, error) {
	out, err := p.eval(v)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("gave %s, want bool", out.Type())
	}
	return bool(b), nil
}

func (p *Program) evalNumber(v *vars) (float64, error) {
	out, err := p.eval(v)
	if err != nil {
		return 0, err
	}
	var f float64
	switch n := out.(type) {
	case types.Int:
		f = float64(n)
	case types.Uint:
		f = float64(n)
	case types.Double:
		f = float64(n)
	default:
		return 0, fmt.Errorf("gave %s, want int, uint or double", out.Type())
	}
	if f != f { // NaN would make the ranking depend on the sort's order.
		return 0, errors.New("gave NaN")
	}
	return f, nil
}

// eval returns CEL's error as it is; the caller names the field. cel-go
// turns a panic in evaluation (its adapter's reflection over the job's
// content, say) into an error itself.
func (p *Program) eval(v *vars) (ref.Val, error) {
	if p == nil || p.prg == nil {
		return nil, errors.New("not compiled")
	}
	out, _, err := p.prg.Eval(v)
	return out, err
}

// vars is the activation of one evaluation: the workload's variables,
// built once per Plan, and one cluster's, built once per cluster.
type vars struct {
	cluster  map[string]any
	workload *workloadVars
}

var _ interpreter.Activation = (*vars)(nil)

func (v *vars) ResolveName(name string) (any, bool) {
	switch name {
	case varCluster:
		return v.cluster, true
	case varWorkload:
		return v.workload.workload, true
	case varObject:
		return v.workload.object, true
	}
	return nil, false
}

func (v *vars) Parent() interpreter.Activation { return nil }

type workloadVars struct {
	workload map[string]any
	object   map[string]any
}

// newWorkloadVars gives the workload in the shapes cel-go's adapter reads
// without reflection: map[string]any, map[string]string, []any, int64 and
// float64.
func newWorkloadVars(w Workload, total demand) *workloadVars {
	podSets := make([]any, 0, len(w.PodSets))
	requests := make(map[string]any, len(total))
	for _, ps := range w.PodSets {
		per := make(map[string]any, len(ps.Requests))
		for r, q := range ps.Requests {
			per[string(r)] = float64(q) / 1000
		}
		podSets = append(podSets, map[string]any{
			"name":     ps.Name,
			"count":    int64(ps.Count),
			"requests": per,
		})
	}
	for r, q := range total {
		requests[string(r)] = float64(q) / 1000
	}
	obj := w.Object
	if obj == nil {
		obj = map[string]any{} // so that has(object.spec) is false, not an error
	}
	return &workloadVars{
		workload: map[string]any{
			"namespace": w.Namespace,
			"queue":     w.Queue,
			"priority":  int64(w.Priority),
			"labels":    stringMap(w.Labels),
			"podSets":   podSets,
			"requests":  requests,
		},
		object: obj,
	}
}

func newVars(c Cluster, w *workloadVars) *vars {
	capacity := map[string]any{}
	if c.Capacity.Known {
		for r, q := range sumFlavors(c.Capacity) {
			capacity[string(r)] = map[string]any{
				"nominal":    float64(q.Nominal) / 1000,
				"borrowable": float64(q.Borrowable) / 1000,
				"usage":      float64(q.Usage) / 1000,
				"pending":    float64(q.Pending) / 1000,
				"free":       float64(now.room(q)) / 1000,
			}
		}
	}
	return &vars{
		cluster: map[string]any{
			"name":     c.Name,
			"labels":   stringMap(c.Labels),
			"capacity": capacity,
		},
		workload: w,
	}
}

// stringMap never gives nil, so that `"k" in labels` works on no labels.
func stringMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
