package mw

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// xMCPHeader is the JSON Schema extension keyword that asks for a tool
// argument to be mirrored into an Mcp-Param-* header.
const xMCPHeader = "x-mcp-header"

// maxSchemaDepth is how deep [ToolParamHeaders] follows a schema; a tool
// whose inputSchema nests deeper is refused rather than walked.
const maxSchemaDepth = 128

// ParamHeader is one x-mcp-header annotation of a tool's inputSchema: the
// argument at Path is mirrored into the header Mcp-Param-{Name}.
type ParamHeader struct {
	// Name is the annotation's value, an RFC 9110 token: the header is
	// [frame.HeaderParamPrefix] + Name.
	Name string
	// Path is the chain of properties keys from the schema's root to the
	// annotated property, and so the keys from the call's arguments object
	// to the value. It is never empty.
	Path []string
	// Type is the property's declared type: "string", "integer" or
	// "boolean".
	Type string
}

// AnnotationError says why a tool's x-mcp-header annotations make it
// invalid (MCP 2026-07-28, digest §3.3): which annotation, and the rule it
// breaks. An HTTP client drops such a tool from the tools/list it surfaces.
type AnnotationError struct {
	// Where is the annotated schema's location in the inputSchema, as a
	// JSON Pointer fragment ("#/properties/region").
	Where string
	// Rule is the rule broken, in words.
	Rule string
}

func (e *AnnotationError) Error() string {
	return xMCPHeader + " at " + e.Where + ": " + e.Rule
}

// ToolParamHeaders reads the x-mcp-header annotations of a tool's
// inputSchema (raw JSON, as the server sent it) and returns them in the
// order they appear, or the first rule they break as an
// [*AnnotationError]. The rules (digest §3.3), any one of which makes the
// whole tool invalid:
//
//   - an annotation sits on a property reachable from the root through
//     properties keys alone: one found under items, prefixItems,
//     additionalProperties, patternProperties, allOf, anyOf, oneOf, not,
//     if, then, else, $defs or any other schema position, or on the root
//     itself, breaks the rule; $ref is never followed;
//   - its value is a non-empty RFC 9110 token (A-Z a-z 0-9 and
//     !#$%&'*+-.^_`|~), unique among the tool's annotations regardless of
//     case;
//   - the property's type is the string "string", "integer" or "boolean".
//
// A schema that is absent, not an object, or has no annotation yields
// none and no error. Only schema positions are searched: an
// "x-mcp-header" key inside default, const, examples or an unknown
// keyword's value is data, not an annotation. When an object repeats a
// key, the last one counts, as in the servers' JSON decoders. A schema
// nested deeper than 128 levels is refused.
func ToolParamHeaders(inputSchema []byte) ([]ParamHeader, error) {
	if !frame.Valid(inputSchema) {
		return nil, &AnnotationError{Where: "#", Rule: "the inputSchema is not JSON"}
	}
	return toolParamHeaders(gjson.ParseBytes(inputSchema))
}

// toolParamHeaders is [ToolParamHeaders] on a parsed schema.
func toolParamHeaders(schema gjson.Result) ([]ParamHeader, error) {
	w := schemaWalk{seen: make(map[string]string)}
	if err := w.visit(schema, "#", nil, true, 0); err != nil {
		return nil, err
	}
	return w.found, nil
}

// schemaWalk collects the annotations of one inputSchema.
type schemaWalk struct {
	found []ParamHeader
	seen  map[string]string // lower-case name → where it was first
}

// Keywords whose value is one schema, an array of schemas, or an object of
// schemas (JSON Schema 2020-12, and draft-07's spellings).
var (
	schemaKeywords = map[string]bool{
		"items": true, "additionalItems": true, "additionalProperties": true,
		"unevaluatedItems": true, "unevaluatedProperties": true, "contains": true,
		"propertyNames": true, "not": true, "if": true, "then": true, "else": true,
		"contentSchema": true,
	}
	schemaArrayKeywords = map[string]bool{
		"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true, "items": true,
	}
	schemaMapKeywords = map[string]bool{
		"patternProperties": true, "$defs": true, "definitions": true,
		"dependentSchemas": true, "dependencies": true,
	}
)

// visit checks schema, found at where, and the schemas inside it. path is
// its chain of properties keys from the root while onChain holds.
func (w *schemaWalk) visit(schema gjson.Result, where string, path []string, onChain bool, depth int) error {
	if !schema.IsObject() {
		return nil // a boolean schema, or not a schema at all
	}
	if depth > maxSchemaDepth {
		return &AnnotationError{Where: where, Rule: fmt.Sprintf("the schema nests deeper than %d levels", maxSchemaDepth)}
	}
	members := lastMembers(schema)
	for _, kv := range members {
		if kv.key == xMCPHeader {
			if err := w.annotation(kv.value, members, where, path, onChain); err != nil {
				return err
			}
		}
	}
	for _, kv := range members {
		k, v := kv.key, kv.value
		at := where + "/" + pointerEscape(k)
		switch {
		case k == "properties" && v.IsObject():
			for _, p := range lastMembers(v) {
				var sub []string
				if onChain {
					sub = append(append(make([]string, 0, len(path)+1), path...), p.key)
				}
				if err := w.visit(p.value, at+"/"+pointerEscape(p.key), sub, onChain, depth+1); err != nil {
					return err
				}
			}
		case schemaMapKeywords[k] && v.IsObject():
			for _, p := range lastMembers(v) {
				if err := w.visit(p.value, at+"/"+pointerEscape(p.key), nil, false, depth+1); err != nil {
					return err
				}
			}
		case schemaArrayKeywords[k] && v.IsArray():
			i := 0
			var err error
			v.ForEach(func(_, e gjson.Result) bool {
				err = w.visit(e, at+"/"+strconv.Itoa(i), nil, false, depth+1)
				i++
				return err == nil
			})
			if err != nil {
				return err
			}
		case schemaKeywords[k]:
			if err := w.visit(v, at, nil, false, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// annotation checks the x-mcp-header value v of the schema whose members
// are members, and records it.
func (w *schemaWalk) annotation(v gjson.Result, members []member, where string, path []string, onChain bool) error {
	switch {
	case !onChain:
		return &AnnotationError{Where: where, Rule: "the property is not reachable through properties keys alone"}
	case len(path) == 0:
		return &AnnotationError{Where: where, Rule: "the root schema is not a property"}
	case v.Type != gjson.String:
		return &AnnotationError{Where: where, Rule: "the value is not a string"}
	case v.Str == "":
		return &AnnotationError{Where: where, Rule: "the value is empty"}
	case !isToken(v.Str):
		return &AnnotationError{Where: where, Rule: fmt.Sprintf("%q is not an RFC 9110 token", v.Str)}
	}
	var typ gjson.Result
	for _, kv := range members {
		if kv.key == "type" {
			typ = kv.value
		}
	}
	if !typ.Exists() {
		return &AnnotationError{Where: where, Rule: "the property has no type; it must be string, integer or boolean"}
	}
	if typ.Type != gjson.String || (typ.Str != "string" && typ.Str != "integer" && typ.Str != "boolean") {
		return &AnnotationError{Where: where, Rule: "the property's type must be string, integer or boolean, not type " + typ.Raw}
	}
	lower := strings.ToLower(v.Str)
	if first, dup := w.seen[lower]; dup {
		return &AnnotationError{Where: where, Rule: fmt.Sprintf("%q repeats the name at %s (names are case-insensitive)", v.Str, first)}
	}
	w.seen[lower] = where
	w.found = append(w.found, ParamHeader{Name: v.Str, Path: path, Type: typ.Str})
	return nil
}

// member is one key and value of a JSON object.
type member struct {
	key   string
	value gjson.Result
}

// lastMembers returns obj's members in order of first appearance, each
// with the value of its last appearance: what encoding/json, Python and
// JavaScript decode a repeated key to.
func lastMembers(obj gjson.Result) []member {
	var out []member
	var index map[string]int
	obj.ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		if i, ok := index[key]; ok {
			out[i].value = v
			return true
		}
		if index == nil {
			index = make(map[string]int)
		}
		index[key] = len(out)
		out = append(out, member{key, v})
		return true
	})
	return out
}

// lastMember returns the value of obj's last member named key.
func lastMember(obj gjson.Result, key string) gjson.Result {
	var out gjson.Result
	if !obj.IsObject() {
		return out
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.String() == key {
			out = v
		}
		return true
	})
	return out
}

// uniqueMember returns the value of obj's member named key, read where names
// are unique: in a message's first three levels (the envelope, params or
// result, and the objects in those, such as params._meta and
// params.arguments), where frame refuses a name given twice. It stops at
// the member, and reads no value it passes over beyond its end.
func uniqueMember(obj gjson.Result, key string) gjson.Result {
	var out gjson.Result
	if !obj.IsObject() {
		return out
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.Str == key {
			out = v
			return false
		}
		return true
	})
	return out
}

// argumentAt returns the value at path in a call's arguments object;
// missing when a key is absent or a step is not an object.
func argumentAt(args gjson.Result, path []string) gjson.Result {
	v := args
	for _, k := range path {
		v = lastMember(v, k)
		if !v.Exists() {
			return v
		}
	}
	return v
}

// headerText returns how an argument's value reads in its Mcp-Param-*
// header, before encoding (digest §3.4): a string as it is, true and false
// as such, a number in decimal. It reports false for a value that gets no
// header: missing, null, an object or an array.
//
// An integer written as an integer keeps its JSON text. Another spelling
// of an integer (42.0, 4.2e1) is written as that integer in decimal ("42"),
// which a server comparing numerically and one comparing the decimal text
// both accept. A number that is not an integer keeps its JSON text.
func headerText(v gjson.Result) (string, bool) {
	switch v.Type {
	case gjson.String:
		return v.Str, true
	case gjson.True:
		return "true", true
	case gjson.False:
		return "false", true
	case gjson.Number:
		return numberText(v.Raw), true
	}
	return "", false
}

// maxExponent bounds the exponent numberText expands: beyond it, the JSON
// text is kept (a 1e999999999 would otherwise take gigabytes).
const maxExponent = 400

// numberText returns the decimal text of a JSON number that is an integer,
// and raw itself otherwise.
func numberText(raw string) string {
	if isIntegerText(raw) {
		return raw
	}
	r, ok := numberValue(raw)
	if !ok || !r.IsInt() {
		return raw
	}
	return r.Num().String()
}

// numberValue returns the value of the JSON number raw, unless its
// exponent is beyond maxExponent.
func numberValue(raw string) (*big.Rat, bool) {
	if i := strings.IndexAny(raw, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(raw[i+1:], "+"))
		if err != nil || e > maxExponent || e < -maxExponent {
			return nil, false
		}
	}
	return new(big.Rat).SetString(raw)
}

// isIntegerText reports whether s is a JSON integer: -?(0|[1-9][0-9]*).
func isIntegerText(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isToken reports whether s is an RFC 9110 token: one or more tchar.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// pointerEscape escapes a key for a JSON Pointer (RFC 6901).
func pointerEscape(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k // most keys: no allocation
	}
	var b strings.Builder
	b.Grow(len(k) + 4)
	for i := 0; i < len(k); i++ {
		switch k[i] {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(k[i])
		}
	}
	return b.String()
}
