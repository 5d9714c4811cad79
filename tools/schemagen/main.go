// Command schemagen writes the Kubernetes schema facts plumb's diff engine needs
// (crates/plumb-core/data/k8s-schema.json).
//
// Structure, list semantics and merge keys come from the OpenAPI v2 document a
// real kube-apiserver serves (testbed/fetch-openapi.sh fetches it). Two facts
// OpenAPI does not carry come from reflection over client-go's scheme, which is
// also the set of kinds Argo CD treats as built-in:
//   - which kinds are built in (registered in client-go's scheme), and
//   - for each field, whether Go encodes it with omitempty and as a pointer,
//     which decides whether a zero value survives Argo CD's typed round trip.
//
// Usage: go run . OPENAPI_V2_JSON > ../../crates/plumb-core/data/k8s-schema.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"k8s.io/client-go/kubernetes/scheme"
)

type openapi struct {
	Info        map[string]any            `json:"info"`
	Paths       map[string]map[string]any `json:"paths"`
	Definitions map[string]map[string]any `json:"definitions"`
}

// Field is one property of a type.
type Field struct {
	T         string   `json:"t"`
	Ref       string   `json:"ref,omitempty"`
	Items     *Field   `json:"items,omitempty"`
	Values    *Field   `json:"values,omitempty"`
	Strategy  string   `json:"strategy,omitempty"`
	MergeKey  string   `json:"mergeKey,omitempty"`
	ListType  string   `json:"listType,omitempty"`
	MapKeys   []string `json:"mapKeys,omitempty"`
	OmitEmpty bool     `json:"omitempty,omitempty"`
	Ptr       bool     `json:"ptr,omitempty"`
	Default   any      `json:"default,omitempty"`
}

// Type is an object type.
type Type struct {
	Fields   map[string]*Field `json:"fields"`
	Required []string          `json:"required,omitempty"`
}

type goField struct{ omitempty, ptr bool }

var special = map[string]string{
	"io.k8s.apimachinery.pkg.api.resource.Quantity":                 "quantity",
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString":               "intstr",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Time":                     "time",
	"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime":                "time",
	"io.k8s.apimachinery.pkg.runtime.RawExtension":                  "any",
	"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1":                 "any",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Patch":                    "any",
	"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": "any",
}

func refName(s map[string]any) string {
	if r, ok := s["$ref"].(string); ok {
		return strings.TrimPrefix(r, "#/definitions/")
	}
	return ""
}

func field(s map[string]any) *Field {
	f := &Field{}
	if r := refName(s); r != "" {
		if t, ok := special[r]; ok {
			f.T = t
		} else {
			f.T, f.Ref = "object", r
		}
	} else {
		typ, _ := s["type"].(string)
		format, _ := s["format"].(string)
		switch {
		case format == "int-or-string":
			f.T = "intstr"
		case typ == "string" && format == "date-time":
			f.T = "time"
		case typ == "string", typ == "integer", typ == "number", typ == "boolean":
			f.T = typ
		case typ == "array":
			f.T = "list"
			if it, ok := s["items"].(map[string]any); ok {
				f.Items = field(it)
			}
		case typ == "object":
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				f.T = "map"
				f.Values = field(ap)
			} else {
				f.T = "any"
			}
		default:
			f.T = "any"
		}
	}
	if v, ok := s["x-kubernetes-patch-strategy"].(string); ok {
		f.Strategy = v
	}
	if v, ok := s["x-kubernetes-patch-merge-key"].(string); ok {
		f.MergeKey = v
	}
	if v, ok := s["x-kubernetes-list-type"].(string); ok {
		f.ListType = v
	}
	if v, ok := s["x-kubernetes-list-map-keys"].([]any); ok {
		for _, k := range v {
			f.MapKeys = append(f.MapKeys, fmt.Sprint(k))
		}
	}
	if v, ok := s["default"]; ok {
		f.Default = v
	}
	return f
}

// openapiName maps a Go type to its OpenAPI definition name (openapi-gen's convention:
// the package path with its first element reversed, then the type name).
func openapiName(t reflect.Type) string {
	p := t.PkgPath()
	parts := strings.SplitN(p, "/", 2)
	host := strings.Split(parts[0], ".")
	for i, j := 0, len(host)-1; i < j; i, j = i+1, j-1 {
		host[i], host[j] = host[j], host[i]
	}
	rest := ""
	if len(parts) > 1 {
		rest = "." + strings.ReplaceAll(parts[1], "/", ".")
	}
	return strings.Join(host, ".") + rest + "." + t.Name()
}

func walkGo(t reflect.Type, out map[string]map[string]goField) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == "" {
		return
	}
	name := openapiName(t)
	if _, seen := out[name]; seen {
		return
	}
	fields := map[string]goField{}
	out[name] = fields
	var collect func(st reflect.Type)
	collect = func(st reflect.Type) {
		for i := 0; i < st.NumField(); i++ {
			sf := st.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			opts := strings.Split(tag, ",")
			if sf.Anonymous && (opts[0] == "" || strings.Contains(tag, "inline")) {
				et := sf.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					collect(et)
				}
				continue
			}
			if !sf.IsExported() || opts[0] == "" {
				continue
			}
			gf := goField{ptr: sf.Type.Kind() == reflect.Pointer}
			for _, o := range opts[1:] {
				if o == "omitempty" {
					gf.omitempty = true
				}
			}
			fields[opts[0]] = gf
			walkGo(sf.Type, out)
		}
	}
	collect(t)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: schemagen OPENAPI_V2_JSON")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var doc openapi
	if err := json.Unmarshal(raw, &doc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	goFacts := map[string]map[string]goField{}
	builtin := map[string]string{} // "group/version/Kind" -> definition
	for gvk, t := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") {
			continue
		}
		name := openapiName(t)
		if _, ok := doc.Definitions[name]; !ok {
			continue // not served by this API server (e.g. a disabled alpha version)
		}
		builtin[gvk.Group+"/"+gvk.Version+"/"+gvk.Kind] = name
		walkGo(t, goFacts)
	}

	// Scope: a kind served under /namespaces/{namespace}/ is namespaced.
	namespaced := map[string]bool{}
	for path, ops := range doc.Paths {
		for _, op := range ops {
			m, _ := op.(map[string]any)
			g, _ := m["x-kubernetes-group-version-kind"].(map[string]any)
			if g == nil {
				continue
			}
			key := fmt.Sprintf("%v/%v", g["group"], g["kind"])
			if strings.Contains(path, "/namespaces/{namespace}/") {
				namespaced[key] = true
			} else if _, seen := namespaced[key]; !seen {
				namespaced[key] = false
			}
		}
	}
	var clusterScoped []string
	for k, ns := range namespaced {
		if !ns {
			clusterScoped = append(clusterScoped, k)
		}
	}
	sort.Strings(clusterScoped)

	types := map[string]*Type{}
	for name, def := range doc.Definitions {
		props, _ := def["properties"].(map[string]any)
		if props == nil {
			continue
		}
		t := &Type{Fields: map[string]*Field{}}
		for _, r := range asList(def["required"]) {
			t.Required = append(t.Required, r)
		}
		sort.Strings(t.Required)
		gf := goFacts[name]
		for pname, ps := range props {
			f := field(ps.(map[string]any))
			if g, ok := gf[pname]; ok {
				f.OmitEmpty, f.Ptr = g.omitempty, g.ptr
			} else {
				// No Go facts (type outside client-go's scheme): optional fields are omitempty.
				f.OmitEmpty = !contains(t.Required, pname)
				f.Ptr = f.OmitEmpty
			}
			t.Fields[pname] = f
		}
		types[name] = t
	}
	out := map[string]any{
		"source":        fmt.Sprintf("OpenAPI v2 %v %v + client-go scheme", doc.Info["title"], doc.Info["version"]),
		"builtin":       builtin,
		"clusterScoped": clusterScoped,
		"types":         types,
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

func asList(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
