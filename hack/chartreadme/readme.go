package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// header is the README above the table of values.
//
//go:embed header.md
var header string

// schema is the part of JSON Schema the chart's values schema uses.
type schema struct {
	Description string             `json:"description"`
	Type        string             `json:"type"`
	Enum        []any              `json:"enum"`
	Ref         string             `json:"$ref"`
	OneOf       []schema           `json:"oneOf"`
	Properties  orderedProperties  `json:"properties"`
	Definitions map[string]*schema `json:"definitions"`
}

// orderedProperties keeps the schema's order of properties, which is the
// order of values.yaml: a reader finds a value where the file has it.
type orderedProperties struct {
	names  []string
	byName map[string]*schema
}

func (p *orderedProperties) UnmarshalJSON(data []byte) error {
	p.byName = map[string]*schema{}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		s := &schema{}
		if err := dec.Decode(s); err != nil {
			return fmt.Errorf("property %s: %w", name, err)
		}
		p.names = append(p.names, name)
		p.byName[name] = s
	}
	return nil
}

// row documents one value.
type row struct {
	path, typ, def, description string
}

// render reads the chart's schema and values and returns its README.
func render(chart string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		return nil, fmt.Errorf("reading the values schema: %w", err)
	}
	root := &schema{}
	if err := json.Unmarshal(data, root); err != nil {
		return nil, fmt.Errorf("decoding the values schema: %w", err)
	}
	data, err = os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		return nil, fmt.Errorf("reading the values: %w", err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("decoding the values: %w", err)
	}
	rows, err := document(root, root, nil, values)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("\n| value | type | default | meaning |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.path, cell(r.typ), r.def, cell(r.description))
	}
	return []byte(b.String()), nil
}

// document lists a row for each property with a description, and goes
// into the properties of those without one. A value with neither is an
// error: every value the chart takes is documented.
func document(root, s *schema, path []string, values map[string]any) ([]row, error) {
	var rows []row
	for _, name := range s.Properties.names {
		p := s.Properties.byName[name]
		at := append(append([]string{}, path...), name)
		if p.Description == "" {
			if len(p.Properties.names) == 0 {
				return nil, fmt.Errorf("%s has no description in the values schema", strings.Join(at, "."))
			}
			more, err := document(root, p, at, values)
			if err != nil {
				return nil, err
			}
			rows = append(rows, more...)
			continue
		}
		def, err := defaultOf(values, at)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{path: strings.Join(at, "."), typ: typeOf(root, p), def: def, description: p.Description})
	}
	return rows, nil
}

// typeOf names a value's type: its enum, its type, or its definition's.
func typeOf(root, s *schema) string {
	switch {
	case len(s.Enum) > 0:
		var names []string
		for _, v := range s.Enum {
			names = append(names, fmt.Sprintf("`%v`", v))
		}
		return strings.Join(names, ", ")
	case s.Ref != "":
		if def := root.Definitions[strings.TrimPrefix(s.Ref, "#/definitions/")]; def != nil {
			return typeOf(root, def)
		}
	case len(s.OneOf) > 0:
		var names []string
		for i := range s.OneOf {
			names = append(names, typeOf(root, &s.OneOf[i]))
		}
		return strings.Join(names, " or ")
	case s.Type != "":
		return s.Type
	}
	return "any"
}

// defaultOf is the value at path in values.yaml, as compact JSON in
// backquotes, or "none" when values.yaml leaves it out.
func defaultOf(values map[string]any, path []string) (string, error) {
	var v any = values
	for _, name := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "none", nil
		}
		if v, ok = m[name]; !ok {
			return "none", nil
		}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encoding the default of %s: %w", strings.Join(path, "."), err)
	}
	return "`" + string(data) + "`", nil
}

// cell keeps text inside one table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}
