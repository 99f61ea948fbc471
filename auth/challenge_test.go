package auth

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestParseWWWAuthenticate(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   []Challenge
	}{
		{
			name:   "bearer with quoted params",
			values: []string{`Bearer realm="mcp", scope="mcp:read hr:read", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"`},
			want: []Challenge{{Scheme: "Bearer", Params: map[string]string{
				"realm": "mcp", "scope": "mcp:read hr:read", "resource_metadata": "https://h/.well-known/oauth-protected-resource/mcp",
			}}},
		},
		{
			name:   "bare error token and case-insensitive names",
			values: []string{`Bearer Error=insufficient_scope, SCOPE="a b"`},
			want:   []Challenge{{Scheme: "Bearer", Params: map[string]string{"error": "insufficient_scope", "scope": "a b"}}},
		},
		{
			name:   "scheme alone",
			values: []string{`Negotiate`},
			want:   []Challenge{{Scheme: "Negotiate"}},
		},
		{
			name:   "two challenges in one field",
			values: []string{`Negotiate, Bearer resource_metadata="https://h/prm"`},
			want: []Challenge{
				{Scheme: "Negotiate"},
				{Scheme: "Bearer", Params: map[string]string{"resource_metadata": "https://h/prm"}},
			},
		},
		{
			name:   "token68 then another challenge",
			values: []string{`Negotiate YII=, Bearer scope="x"`},
			want: []Challenge{
				{Scheme: "Negotiate", Token68: "YII="},
				{Scheme: "Bearer", Params: map[string]string{"scope": "x"}},
			},
		},
		{
			name:   "params then a second challenge with params",
			values: []string{`Basic realm="a", Bearer realm="b", error="invalid_token"`},
			want: []Challenge{
				{Scheme: "Basic", Params: map[string]string{"realm": "a"}},
				{Scheme: "Bearer", Params: map[string]string{"realm": "b", "error": "invalid_token"}},
			},
		},
		{
			name:   "several fields",
			values: []string{`Negotiate`, `Bearer scope="s"`},
			want: []Challenge{
				{Scheme: "Negotiate"},
				{Scheme: "Bearer", Params: map[string]string{"scope": "s"}},
			},
		},
		{
			name:   "escapes in a quoted string",
			values: []string{`Bearer error_description="say \"no\" \\ twice"`},
			want:   []Challenge{{Scheme: "Bearer", Params: map[string]string{"error_description": `say "no" \ twice`}}},
		},
		{
			name:   "unterminated quote runs to the end",
			values: []string{`Bearer scope="a b`},
			want:   []Challenge{{Scheme: "Bearer", Params: map[string]string{"scope": "a b"}}},
		},
		{
			name:   "empty list elements and junk",
			values: []string{` , ,Bearer  scope = "x" junk , , `},
			want:   []Challenge{{Scheme: "Bearer", Params: map[string]string{"scope": "x"}}},
		},
		{
			name:   "duplicate param keeps the first",
			values: []string{`Bearer scope="a", scope="b"`},
			want:   []Challenge{{Scheme: "Bearer", Params: map[string]string{"scope": "a"}}},
		},
		{
			name:   "nothing",
			values: []string{"", "   "},
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := ParseWWWAuthenticate(tt.values)
			is.Equal(len(got), len(tt.want)) // number of challenges
			for i := range got {
				is.Equal(got[i].Scheme, tt.want[i].Scheme)
				is.Equal(got[i].Token68, tt.want[i].Token68)
				is.Equal(len(got[i].Params), len(tt.want[i].Params))
				for k, v := range tt.want[i].Params {
					is.Equal(got[i].Params[k], v) // param
				}
			}
		})
	}
}

func TestHintsFrom(t *testing.T) {
	is := is.New(t)
	h := http.Header{}
	h.Add("WWW-Authenticate", `Negotiate`)
	h.Add("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:read hr:read mcp:read", resource_metadata="https://h/prm"`)
	got := hintsFrom(h)
	is.Equal(got.err, "insufficient_scope")
	is.Equal(got.scopes, []string{"mcp:read", "hr:read"}) // split, deduplicated
	is.Equal(got.resourceMetadata, "https://h/prm")

	// A non-Bearer scheme carrying the parameter is still read.
	h = http.Header{}
	h.Set("WWW-Authenticate", `DPoP resource_metadata="https://h/x"`)
	is.Equal(hintsFrom(h).resourceMetadata, "https://h/x")
}

func FuzzParseWWWAuthenticate(f *testing.F) {
	for _, s := range []string{
		`Bearer realm="mcp", scope="a b", resource_metadata="https://h/prm"`,
		`Negotiate, Bearer error=insufficient_scope`,
		`Basic YWxhZGRpbjpvcGVuc2VzYW1l`,
		`Negotiate YII=, Bearer scope="x"`,
		`Bearer scope="unterminated`,
		`,,,`, `=`, `Bearer ,=,"`, `a b=c d=e, f g, h`, "Bearer x=\"\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs := ParseWWWAuthenticate([]string{s})
		if len(cs) > len(s) {
			t.Fatalf("%d challenges from %d bytes", len(cs), len(s))
		}
		for _, c := range cs {
			if c.Scheme == "" {
				t.Fatal("empty scheme")
			}
			for k := range c.Params {
				if k != strings.ToLower(k) || k == "" {
					t.Fatalf("param name %q not lowercased", k)
				}
			}
		}
		ChallengeParam(cs, "scope")
	})
}
