package mw

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
)

func TestToolParamHeadersValid(t *testing.T) {
	for _, tt := range []struct {
		name, schema string
		want         []ParamHeader
	}{
		{"no schema", ``, nil},
		{"not an object", `true`, nil},
		{"no annotation", `{"type":"object","properties":{"a":{"type":"string"}}}`, nil},
		{"top level", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"q":{"type":"string"}}}`,
			[]ParamHeader{{Name: "Region", Path: []string{"region"}, Type: "string"}}},
		{"all three types, in order", `{"properties":{"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"B"},"s":{"type":"string","x-mcp-header":"S"}}}`,
			[]ParamHeader{{"N", []string{"n"}, "integer"}, {"B", []string{"b"}, "boolean"}, {"S", []string{"s"}, "string"}}},
		{"nested through properties", `{"properties":{"loc":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}`,
			[]ParamHeader{{"Zone", []string{"loc", "zone"}, "string"}}},
		{"every tchar", `{"properties":{"a":{"type":"string","x-mcp-header":"!#$%&'*+-.^_` + "`" + `|~09azAZ"}}}`,
			[]ParamHeader{{"!#$%&'*+-.^_`|~09azAZ", []string{"a"}, "string"}}},
		{"a reserved-looking name is fine", `{"properties":{"m":{"type":"string","x-mcp-header":"Method"}}}`,
			[]ParamHeader{{"Method", []string{"m"}, "string"}}},
		{"keys with dots and slashes", `{"properties":{"a.b/c":{"type":"string","x-mcp-header":"X"}}}`,
			[]ParamHeader{{"X", []string{"a.b/c"}, "string"}}},
		{"data is not an annotation", `{"properties":{"a":{"type":"object","default":{"x-mcp-header":"D"},"examples":[{"x-mcp-header":"E"}],"x-vendor":{"x-mcp-header":"V"}}}}`, nil},
		{"a property named x-mcp-header", `{"properties":{"x-mcp-header":{"type":"string"}}}`, nil},
		{"siblings on the way do not matter", `{"oneOf":[{"required":["a"]}],"properties":{"a":{"type":"string","x-mcp-header":"A"}}}`,
			[]ParamHeader{{"A", []string{"a"}, "string"}}},
		{"last repeated key counts", `{"properties":{"a":{"type":"number","x-mcp-header":"Old","type":"string","x-mcp-header":"New"}}}`,
			[]ParamHeader{{"New", []string{"a"}, "string"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := ToolParamHeaders([]byte(orNull(tt.schema)))
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}

// orNull stands null for an absent schema.
func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

func TestToolParamHeadersInvalid(t *testing.T) {
	for _, tt := range []struct {
		name, schema, where, rule string
	}{
		{"empty name", `{"properties":{"a":{"type":"string","x-mcp-header":""}}}`, "#/properties/a", "empty"},
		{"not a string", `{"properties":{"a":{"type":"string","x-mcp-header":7}}}`, "#/properties/a", "not a string"},
		{"space", `{"properties":{"a":{"type":"string","x-mcp-header":"My Region"}}}`, "#/properties/a", "RFC 9110 token"},
		{"colon", `{"properties":{"a":{"type":"string","x-mcp-header":"A:B"}}}`, "#/properties/a", "RFC 9110 token"},
		{"CR LF", `{"properties":{"a":{"type":"string","x-mcp-header":"A\r\nB"}}}`, "#/properties/a", "RFC 9110 token"},
		{"non-ASCII", `{"properties":{"a":{"type":"string","x-mcp-header":"Région"}}}`, "#/properties/a", "RFC 9110 token"},
		{"number", `{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}`, "#/properties/a", `not type "number"`},
		{"object", `{"properties":{"a":{"type":"object","x-mcp-header":"A"}}}`, "#/properties/a", "not type"},
		{"array", `{"properties":{"a":{"type":"array","x-mcp-header":"A"}}}`, "#/properties/a", "not type"},
		{"null", `{"properties":{"a":{"type":"null","x-mcp-header":"A"}}}`, "#/properties/a", "not type"},
		{"type list", `{"properties":{"a":{"type":["string","null"],"x-mcp-header":"A"}}}`, "#/properties/a", `not type ["string","null"]`},
		{"no type", `{"properties":{"a":{"x-mcp-header":"A"}}}`, "#/properties/a", "has no type"},
		{"duplicate, other case", `{"properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"REGION"}}}`, "#/properties/b", "#/properties/a"},
		{"duplicate across depths", `{"properties":{"a":{"type":"string","x-mcp-header":"R"},"o":{"properties":{"r":{"type":"string","x-mcp-header":"r"}}}}}`, "#/properties/o/properties/r", "case-insensitive"},
		{"root", `{"type":"string","x-mcp-header":"Root"}`, "#", "root"},
		{"items", `{"properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"L"}}}}`, "#/properties/l/items", "properties keys alone"},
		{"items array", `{"properties":{"l":{"items":[{"type":"string","x-mcp-header":"L"}]}}}`, "#/properties/l/items/0", "properties keys alone"},
		{"prefixItems", `{"properties":{"l":{"prefixItems":[true,{"type":"string","x-mcp-header":"L"}]}}}`, "#/properties/l/prefixItems/1", "properties keys alone"},
		{"oneOf", `{"properties":{"a":{"oneOf":[{"type":"string","x-mcp-header":"A"}]}}}`, "#/properties/a/oneOf/0", "properties keys alone"},
		{"anyOf", `{"anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`, "#/anyOf/0/properties/a", "properties keys alone"},
		{"allOf", `{"allOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`, "#/allOf/0/properties/a", "properties keys alone"},
		{"not", `{"not":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`, "#/not/properties/a", "properties keys alone"},
		{"if", `{"if":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`, "#/if/properties/a", "properties keys alone"},
		{"then", `{"then":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`, "#/then/properties/a", "properties keys alone"},
		{"else", `{"else":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`, "#/else/properties/a", "properties keys alone"},
		{"$defs behind $ref", `{"properties":{"a":{"$ref":"#/$defs/r"}},"$defs":{"r":{"type":"string","x-mcp-header":"A"}}}`, "#/$defs/r", "properties keys alone"},
		{"definitions", `{"definitions":{"r":{"type":"string","x-mcp-header":"A"}}}`, "#/definitions/r", "properties keys alone"},
		{"additionalProperties", `{"additionalProperties":{"type":"string","x-mcp-header":"A"}}`, "#/additionalProperties", "properties keys alone"},
		{"patternProperties", `{"patternProperties":{"^a":{"type":"string","x-mcp-header":"A"}}}`, "#/patternProperties/^a", "properties keys alone"},
		{"pointer escapes", `{"properties":{"a/b~":{"items":{"type":"string","x-mcp-header":"A"}}}}`, "#/properties/a~1b~0/items", "properties keys alone"},
		{"not JSON", `{"properties":`, "#", "not JSON"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := ToolParamHeaders([]byte(tt.schema))
			is.Equal(got, nil)
			var ae *AnnotationError
			is.True(errors.As(err, &ae)) // an *AnnotationError
			is.Equal(ae.Where, tt.where)
			is.True(strings.Contains(ae.Rule, tt.rule)) // the rule broken is named
			is.True(strings.HasPrefix(err.Error(), "x-mcp-header at "+tt.where+": "))
		})
	}
}

func TestToolParamHeadersDepth(t *testing.T) {
	is := is.New(t)
	deep := func(n int) string {
		return strings.Repeat(`{"properties":{"a":`, n) + `{"type":"string","x-mcp-header":"A"}` + strings.Repeat(`}}`, n)
	}
	got, err := ToolParamHeaders([]byte(deep(maxSchemaDepth)))
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(len(got[0].Path), maxSchemaDepth)
	_, err = ToolParamHeaders([]byte(deep(maxSchemaDepth + 1)))
	is.True(err != nil) // deeper is refused
	is.True(strings.Contains(err.Error(), "nests deeper"))
}

func TestHeaderText(t *testing.T) {
	for _, tt := range []struct {
		json, want string
		ok         bool
	}{
		{`"us-west1"`, "us-west1", true},
		{`"Hello, 世界"`, "Hello, 世界", true},
		{`""`, "", true},
		{`"a\u0000b"`, "a\x00b", true},
		{`true`, "true", true},
		{`false`, "false", true},
		{`42`, "42", true},
		{`-7`, "-7", true},
		{`0`, "0", true},
		{`-0`, "-0", true},
		{`9007199254740993`, "9007199254740993", true}, // beyond 2^53: the text, not a float
		{`42.0`, "42", true},
		{`4.2e1`, "42", true},
		{`1E2`, "100", true},
		{`-1.50e1`, "-15", true},
		{`12345678901234567890.000`, "12345678901234567890", true},
		{`42.5`, "42.5", true},
		{`1e-3`, "1e-3", true},
		{`1e999999999`, "1e999999999", true},
		{`null`, "", false},
		{`{"a":1}`, "", false},
		{`[1]`, "", false},
	} {
		t.Run(tt.json, func(t *testing.T) {
			is := is.New(t)
			got, ok := headerText(gjson.Parse(tt.json))
			is.Equal(ok, tt.ok)
			is.Equal(got, tt.want)
		})
	}
	got, ok := headerText(gjson.Get(`{}`, "missing"))
	is.New(t).True(!ok && got == "") // missing: no header
}

func TestArgumentAt(t *testing.T) {
	is := is.New(t)
	args := gjson.Parse(`{"a":{"b":1,"b":2},"0":"zero","l":["x"],"k.e*y":"esc","n":null}`)
	is.Equal(argumentAt(args, []string{"a", "b"}).Raw, "2")         // the last repeated key, as decoders read it
	is.Equal(argumentAt(args, []string{"0"}).Raw, `"zero"`)         // a key, never an index
	is.True(!argumentAt(args, []string{"l", "0"}).Exists())         // arrays are not walked
	is.Equal(argumentAt(args, []string{"k.e*y"}).Raw, `"esc"`)      // no gjson syntax in keys
	is.True(!argumentAt(args, []string{"a", "b", "c"}).Exists())    // through a number
	is.True(!argumentAt(args, []string{"missing"}).Exists())        // absent
	is.Equal(argumentAt(args, []string{"n"}).Type, gjson.Null)      // null is there, and gets no header
	is.True(!argumentAt(gjson.Parse(`[]`), []string{"a"}).Exists()) // not an object
}

// FuzzToolParamHeaders feeds arbitrary inputSchemas to the annotation
// walker: nothing may panic, the answer is the same twice, and every
// annotation it returns keeps the rules and is found again by following
// its path through properties keys.
func FuzzToolParamHeaders(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
		`{"properties":{"loc":{"properties":{"zone":{"type":"integer","x-mcp-header":"Zone"}}}}}`,
		`{"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"boolean","x-mcp-header":"a"}}}`,
		`{"properties":{"l":{"items":{"type":"string","x-mcp-header":"L"}}}}`,
		`{"$defs":{"r":{"x-mcp-header":"R","type":"string"}},"properties":{"r":{"$ref":"#/$defs/r"}}}`,
		`{"properties":{"a":{"type":"string","x-mcp-header":"A","x-mcp-header":"B"}}}`,
		`{"x-mcp-header":"Root","type":"string"}`, `[]`, `null`, `{"properties":[]}`, `{"properties":{"a":true}}`,
		strings.Repeat(`{"properties":{"a":`, 300) + `{"type":"string","x-mcp-header":"Deep"}` + strings.Repeat(`}}`, 300),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ToolParamHeaders(b)
		again, err2 := ToolParamHeaders(b)
		if fmt.Sprint(got, err) != fmt.Sprint(again, err2) {
			t.Fatalf("two answers for %q", b)
		}
		if err != nil {
			var ae *AnnotationError
			if !errors.As(err, &ae) || got != nil {
				t.Fatalf("error %v (%T) with %v for %q", err, err, got, b)
			}
			return
		}
		seen := map[string]bool{}
		for _, h := range got {
			if !isToken(h.Name) || len(h.Path) == 0 || seen[strings.ToLower(h.Name)] {
				t.Fatalf("bad or repeated %+v for %q", h, b)
			}
			seen[strings.ToLower(h.Name)] = true
			if h.Type != "string" && h.Type != "integer" && h.Type != "boolean" {
				t.Fatalf("type %q for %q", h.Type, b)
			}
			node := gjson.ParseBytes(b)
			for _, k := range h.Path {
				node = lastMember(lastMember(node, "properties"), k)
			}
			if v := lastMember(node, xMCPHeader); v.Type != gjson.String || v.Str != h.Name {
				t.Fatalf("%+v not found again along its path in %q", h, b)
			}
		}
	})
}

// FuzzNumberText checks that a number's header text is its JSON text, or
// the same integer in decimal.
func FuzzNumberText(f *testing.F) {
	for _, s := range []string{"42", "42.0", "4.2e1", "-0", "1e400", "1e401", "0.5", "-1.50E+1", "123456789012345678901234567890.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := gjson.Parse(s)
		if v.Type != gjson.Number || v.Raw != s || !gjson.Valid(s) {
			return
		}
		got := numberText(s)
		if got == s {
			return
		}
		if !isIntegerText(got) {
			t.Fatalf("%q became %q, not an integer", s, got)
		}
		a, _ := new(big.Rat).SetString(s)
		b, _ := new(big.Rat).SetString(got)
		if a.Cmp(b) != 0 {
			t.Fatalf("%q became %q, another number", s, got)
		}
	})
}

func ExampleToolParamHeaders() {
	schema := []byte(`{
		"type": "object",
		"properties": {
			"region": {"type": "string", "x-mcp-header": "Region"},
			"query": {"type": "string"}
		}
	}`)
	hs, err := ToolParamHeaders(schema)
	fmt.Println(hs, err)

	_, err = ToolParamHeaders([]byte(`{"properties":{"ids":{"type":"array","items":{"type":"string","x-mcp-header":"Id"}}}}`))
	fmt.Println(err)
	// Output:
	// [{Region [region] string}] <nil>
	// x-mcp-header at #/properties/ids/items: the property is not reachable through properties keys alone
}

// Keys are escaped for a JSON Pointer as RFC 6901 says: "~" first, then
// "/", so that "~1" in a key stays two characters.
func TestPointerEscape(t *testing.T) {
	is := is.New(t)
	for in, want := range map[string]string{
		"":         "",
		"region":   "region",
		"a/b":      "a~1b",
		"m~n":      "m~0n",
		"~1":       "~01",
		"/~/":      "~1~0~1",
		"ünï/cøde": "ünï~1cøde",
	} {
		is.Equal(pointerEscape(in), want) // escaped
	}
	is.Equal(testing.AllocsPerRun(100, func() { _ = pointerEscape("region") }), 0.0) // a plain key costs nothing
}
