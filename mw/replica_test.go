package mw

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestCheckReplicaID(t *testing.T) {
	is := is.New(t)
	for _, ok := range []string{"a", "pod-0", "mcp-stdio-2", "A_b-9", strings.Repeat("x", MaxReplicaIDLen)} {
		is.NoErr(CheckReplicaID(ok))
	}
	for _, bad := range []string{"", "a.b", "host.example.com", "sp ace", "tab\t", "é", "nl\n", "a&b", "a%20", "a/b", strings.Repeat("x", MaxReplicaIDLen+1)} {
		err := CheckReplicaID(bad)
		is.True(err != nil)                                  // refused
		is.True(!strings.Contains(err.Error(), "\n"))        // one line
		is.True(strings.Contains(err.Error(), "replica id")) // names the rule
	}
}

func TestReplicaSessionIDs(t *testing.T) {
	is := is.New(t)
	mint := ReplicaSessionIDs("pod-1")
	seen := map[string]bool{}
	for range 100 {
		id := mint()
		is.True(strings.HasPrefix(id, "pod-1."))
		is.Equal(len(id), len("pod-1.")+26) // 128 random bits in base32
		is.Equal(SessionReplica(id), "pod-1")
		for i := 0; i < len(id); i++ {
			is.True(id[i] >= 0x21 && id[i] <= 0x7e) // visible ASCII
		}
		is.True(!seen[id])
		seen[id] = true
		is.Equal(ShortSessionID(id), SessionHash(id)) // logs name a hash, never a part of the id
		is.True(!strings.Contains(id, ShortSessionID(id)))
	}
	is.Equal(SessionReplica("ABCDEFGHIJ"), "")
	is.Equal(ShortSessionID("ABCDEFGHIJ"), "261305762671") // sha256("ABCDEFGHIJ")[:6], hex
}

// A session id naming another replica is unknown here: 404, exactly as
// an id never issued, for every method; the same random part under this
// replica's name is answered.
func TestSessionsForeignReplica404(t *testing.T) {
	is := is.New(t)
	var sid string
	mint := ReplicaSessionIDs("pod-0")
	h := newSessionsHarness(t, SessionsOptions{NewID: func() string { sid = mint(); return sid }})
	_, err := h.do(t, http.MethodPost, "", initBody)
	is.NoErr(err)
	is.Equal(SessionReplica(sid), "pod-0")
	_, err = h.do(t, http.MethodPost, sid, pingBody)
	is.NoErr(err) // its own replica's id is answered

	foreign := "pod-1." + sid[len("pod-0."):]
	for _, tt := range []struct{ method, sid, body string }{
		{http.MethodPost, foreign, pingBody},
		{http.MethodGet, foreign, ""},
		{http.MethodDelete, foreign, ""},
		{http.MethodPost, foreign, initBody},
	} {
		_, errForeign := h.do(t, tt.method, tt.sid, tt.body)
		_, errUnknown := h.do(t, tt.method, "pod-0.NEVERISSUED", tt.body)
		sf, bf := refusal(errForeign)
		su, bu := refusal(errUnknown)
		is.Equal(sf, http.StatusNotFound) // tt.method
		is.Equal(sf, su)                  // as an unknown id
		is.Equal(bf, bu)                  // byte for byte
	}
	is.Equal(h.s.Len(), 1) // the foreign DELETE ended nothing
}
