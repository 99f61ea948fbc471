package mw

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// parkKey is the state key of the tests.
var parkKey = []byte("0123456789abcdef0123456789abcdef")

func TestParseStateKey(t *testing.T) {
	is := is.New(t)
	key := NewStateKey()
	is.Equal(len(key), StateKeySize)
	for _, s := range []string{
		hex.EncodeToString(key),
		strings.ToUpper(hex.EncodeToString(key)),
		base64.StdEncoding.EncodeToString(key),
		base64.RawURLEncoding.EncodeToString(key),
		"  " + base64.URLEncoding.EncodeToString(key) + "\n",
	} {
		got, err := ParseStateKey(s)
		is.NoErr(err)      // s
		is.Equal(got, key) // s
	}
	for _, s := range []string{"", "short", hex.EncodeToString(key[:31]), base64.StdEncoding.EncodeToString(append(key, 0)), strings.Repeat("g", 64)} {
		_, err := ParseStateKey(s)
		is.True(err != nil)                                   // s
		is.True(!strings.Contains(err.Error(), s) || s == "") // the value is not repeated
	}
	is.Equal(len(NewReplicaID()), 16)
	is.True(NewReplicaID() != NewReplicaID())
}

func TestStateSealsAndOpens(t *testing.T) {
	is := is.New(t)
	s, err := newStateSealer(parkKey)
	is.NoErr(err)
	st := requestState{
		expiry: time.UnixMilli(1785240000123),
		hash:   [32]byte{1, 2, 3},
		handle: stateHandle{instance: [8]byte{9, 9}, n: 42},
	}
	st.principal[0], st.replica[31] = 5, 6
	token := s.seal(st)
	is.True(token != s.seal(st)) // a fresh nonce each time
	got, err := s.open(token)
	is.NoErr(err)
	is.True(got.expiry.Equal(st.expiry))
	got.expiry = st.expiry
	is.Equal(got, st)

	other, _ := newStateSealer(NewStateKey())
	_, err = other.open(token)
	is.Equal(err, errStateForged) // another key
	_, err = newStateSealer(parkKey[:16])
	is.True(err != nil) // AES-128 keys are refused
}

// FuzzOpenRequestState hands hostile requestState strings to the opener:
// it never panics, and nothing opens but what was sealed (each process of
// the fuzzer seals its own, with its own nonce, so opening is checked on
// the contents).
func FuzzOpenRequestState(f *testing.F) {
	s, err := newStateSealer(parkKey)
	if err != nil {
		f.Fatal(err)
	}
	sealed := requestState{expiry: time.UnixMilli(1785240000000), handle: stateHandle{n: 1}}
	valid := s.seal(sealed)
	validRaw, _ := base64.RawURLEncoding.DecodeString(valid)
	for _, seed := range []string{
		valid, valid[:len(valid)-1], valid + "A", "", "AQ", "=", "AQAAAAAAAAAAAAAA",
		strings.Repeat("A", 164), strings.Repeat("_", 2000), "\x00\xff", "eyJhbGciOiJub25lIn0",
		base64.RawURLEncoding.EncodeToString(append([]byte{2}, validRaw[1:]...)),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		got, err := s.open(token)
		if err != nil {
			if err != errStateMalformed && err != errStateForged {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !got.expiry.Equal(sealed.expiry) || got.handle != sealed.handle || got.hash != sealed.hash {
			t.Fatalf("%q opened and is not the sealed state", token)
		}
	})
}
