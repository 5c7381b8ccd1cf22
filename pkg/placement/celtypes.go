package placement

import (
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// The object types of the cluster and workload variables and of what they
// hold, as newVars and newWorkloadVars fill them.
const (
	typeCluster  = "courier.Cluster"
	typeQuota    = "courier.Quota"
	typeWorkload = "courier.Workload"
	typePodSet   = "courier.PodSet"
)

type objectField struct {
	name string
	typ  *cel.Type
}

// objectTypes declares each object type field by field, sorted by name as
// the messages list them. Knowing them, CEL's type checker refuses a
// misspelt field at any depth (workload.podSets[0].cuont) and types what a
// field gives (a label's value is a string).
var objectTypes = map[string][]objectField{
	typeCluster: {
		{"capacity", cel.MapType(cel.StringType, cel.ObjectType(typeQuota))},
		{"labels", cel.MapType(cel.StringType, cel.StringType)},
		{"name", cel.StringType},
	},
	typeQuota: {
		{"borrowable", cel.DoubleType},
		{"free", cel.DoubleType},
		{"nominal", cel.DoubleType},
		{"pending", cel.DoubleType},
		{"usage", cel.DoubleType},
	},
	typeWorkload: {
		{"labels", cel.MapType(cel.StringType, cel.StringType)},
		{"namespace", cel.StringType},
		{"podSets", cel.ListType(cel.ObjectType(typePodSet))},
		{"priority", cel.IntType},
		{"queue", cel.StringType},
		{"requests", cel.MapType(cel.StringType, cel.DoubleType)},
	},
	typePodSet: {
		{"count", cel.IntType},
		{"name", cel.StringType},
		{"requests", cel.MapType(cel.StringType, cel.DoubleType)},
	},
}

// fieldNames gives the fields of an object type, in objectTypes' order.
func fieldNames(typeName string) ([]string, bool) {
	fs, ok := objectTypes[typeName]
	if !ok {
		return nil, false
	}
	names := make([]string, 0, len(fs))
	for _, f := range fs {
		names = append(names, f.name)
	}
	return names, true
}

// withObjectTypes adds objectTypes to the environment's type provider.
func withObjectTypes() cel.EnvOption {
	return func(e *cel.Env) (*cel.Env, error) {
		return cel.CustomTypeProvider(objectProvider{Provider: e.CELTypeProvider()})(e)
	}
}

// objectProvider knows objectTypes and defers every other type to the
// provider it wraps. Its fields have no getters, so the interpreter reads
// them as keys of the maps newVars and newWorkloadVars build, with no
// reflection and no conversion of each cluster into a Go struct.
type objectProvider struct {
	types.Provider
}

func (p objectProvider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := objectTypes[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

func (p objectProvider) FindStructFieldNames(name string) ([]string, bool) {
	if names, ok := fieldNames(name); ok {
		return names, true
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p objectProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	fs, ok := objectTypes[name]
	if !ok {
		return p.Provider.FindStructFieldType(name, field)
	}
	i := slices.IndexFunc(fs, func(f objectField) bool { return f.name == field })
	if i < 0 {
		return nil, false
	}
	return &types.FieldType{Type: fs[i].typ}, true
}
