package auth

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestBearerGateCheck(t *testing.T) {
	g := NewBearerGate("s3cret-token")
	for _, tt := range []struct {
		name      string
		values    []string
		ok        bool
		presented bool
	}{
		{"right token", []string{"Bearer s3cret-token"}, true, true},
		{"scheme in any case", []string{"bearer s3cret-token"}, true, true},
		{"extra spaces", []string{"  Bearer   s3cret-token "}, true, true},
		{"no header", nil, false, false},
		{"other scheme", []string{"Basic czNjcmV0LXRva2Vu"}, false, false},
		{"scheme only", []string{"Bearer"}, false, false},
		{"empty token", []string{"Bearer "}, false, false},
		{"empty token after spaces", []string{"Bearer    x"[:9]}, false, false},
		{"wrong token", []string{"Bearer s3cret-tokeN"}, false, true},
		{"prefix of the token", []string{"Bearer s3cret"}, false, true},
		{"token with more", []string{"Bearer s3cret-token-and-more"}, false, true},
		{"two headers", []string{"Bearer s3cret-token", "Bearer s3cret-token"}, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := httptest.NewRequest("POST", "/mcp", nil)
			for _, v := range tt.values {
				r.Header.Add("Authorization", v)
			}
			ok, presented := g.Check(r)
			is.Equal(ok, tt.ok)
			is.Equal(presented, tt.presented)
		})
	}
}

// FuzzBearerGateCheck feeds arbitrary Authorization values to the gate:
// nothing may panic, and only the token itself passes.
func FuzzBearerGateCheck(f *testing.F) {
	for _, s := range []string{"Bearer tok", "bearer tok", "Bearer", "Bearer  ", "Basic dG9r", "tok", "Bearer tok\x00", "Bearer \ttok"} {
		f.Add(s)
	}
	g := NewBearerGate("tok")
	f.Fuzz(func(t *testing.T, v string) {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header["Authorization"] = []string{v}
		if ok, presented := g.Check(r); ok {
			scheme, token, _ := strings.Cut(strings.TrimSpace(v), " ")
			if !presented || !strings.EqualFold(scheme, "bearer") || strings.TrimLeft(token, " ") != "tok" {
				t.Fatalf("%q passed", v)
			}
		}
	})
}
