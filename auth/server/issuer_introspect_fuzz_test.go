package server

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// FuzzIntrospectionAnswer feeds an issuer's introspection answer: whatever
// its bytes, judging it must not panic, and a token is accepted only when
// the answer's active is the JSON boolean true and its claims hold.
func FuzzIntrospectionAnswer(f *testing.F) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	const iss, res = "https://idp.example", "https://as.test/mcp"
	good := `{"active":true,"iss":"` + iss + `","aud":"` + res + `","sub":"alice","exp":1785240000,"scope":"mcp"}`
	f.Add([]byte(good))
	f.Add([]byte(`{"active":"true","iss":"` + iss + `","aud":"` + res + `","sub":"alice","exp":1785240000}`))
	f.Add([]byte(`{"active":1,"aud":"` + res + `","sub":"alice","exp":1785240000}`))
	f.Add([]byte(`{"active":null}`))
	f.Add([]byte(`{"active":false,"active":true,"aud":"` + res + `","sub":"a","exp":1785240000}`))
	f.Add([]byte(`{"active":true,"active":false}`))
	f.Add([]byte(`{"active": true , "aud":["x","` + res + `"],"sub":"a","exp":1785240000.5}`))
	f.Add([]byte(`{"active":[true]}`))
	f.Add([]byte(`{"active":true,"scope":7}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`"active"`))
	f.Add([]byte(`{"active":true,"aud":"` + res + `","sub":"alice","exp":1785240000,"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`))
	f.Add([]byte(`{"active":true`))
	v := &issuerVerifier{issuer: iss, resource: res, now: func() time.Time { return now }, log: slog.New(slog.DiscardHandler)}
	in := &introspector{v: v, faults: newQuietLog(v.log)}
	f.Fuzz(func(t *testing.T, body []byte) {
		ans, err := decodeIntrospection(body)
		if err != nil {
			return
		}
		p, err := in.judge(ans, now)
		if err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("judging an answer is a refusal or an acceptance, got %v", err)
			}
			return
		}
		var m map[string]any
		if json.Unmarshal(body, &m) != nil || m["active"] != true {
			t.Fatalf("accepted an answer whose active is not true: %s", body)
		}
		if p.Subject == "" || p.Issuer != iss {
			t.Fatalf("accepted without a subject or with another issuer: %+v", p)
		}
	})
}
