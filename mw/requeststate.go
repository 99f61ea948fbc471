package mw

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// StateKeySize is the size of the key that seals a requestState
// (AES-256-GCM): 32 bytes.
const StateKeySize = 32

// NewStateKey returns a fresh random key for [ParkOptions].StateKey. A
// gateway that has no configured key makes one at start: the states it
// issues then die with the process, and so do the calls they name.
func NewStateKey() []byte {
	k := make([]byte, StateKeySize)
	_, _ = rand.Read(k) // never fails (crypto/rand, Go 1.24 and later)
	return k
}

// NewReplicaID returns a fresh random replica id for
// [ParkOptions].ReplicaID: 16 hex digits.
func NewReplicaID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ParseStateKey reads a requestState key as it is written on a command
// line or in the environment (serve's --state-key, MCP_STDIO_STATE_KEY):
// 64 hex digits, or the base64 of 32 bytes (standard or URL alphabet,
// padded or not). Surrounding white space is ignored. Anything else is an
// error that does not repeat the value.
func ParseStateKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*StateKeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == StateKeySize {
			return k, nil
		}
	}
	return nil, fmt.Errorf("mw: a state key is %d bytes, written as %d hex digits or in base64", StateKeySize, 2*StateKeySize)
}

// A sealed requestState, as [ParkChildRequests] hands it to a client, is
// the unpadded base64url of
//
//	version (1 byte, 1) | nonce (12 bytes) | AES-256-GCM ciphertext and tag
//
// with the version byte and stateLabel as additional data. The plaintext is
// fixed-size, stateSize bytes, big-endian:
//
//	expiry (unix milliseconds, 8) | request hash (32) | handle (16) |
//	SHA-256 of the principal (32) | SHA-256 of the replica id (32)
//
// The principal and replica id are hashed so that the plaintext has one
// size whatever their length; the state is compared, never shown.
const (
	stateVersion   = 1
	stateLabel     = "mcp-stdio requestState"
	stateNonceSize = 12
	stateSize      = 8 + 32 + stateHandleSize + 32 + 32
	// stateMaxLen bounds the string opened: a genuine one is far shorter.
	stateMaxLen = 1024
)

// stateHandleSize is the size of a handle: the instance of the stage that
// parked the call (8 random bytes) and a counter within it (8).
const stateHandleSize = 16

// stateHandle names a parked call: the stage instance (one per child) and
// the round's number there.
type stateHandle struct {
	instance [8]byte
	n        uint64
}

// requestState is what a sealed requestState binds: whom it was issued
// to, until when, for which request, which parked round, on which replica.
type requestState struct {
	expiry    time.Time
	hash      [32]byte // requestHash of the call
	handle    stateHandle
	principal [32]byte // sha256 of the principal
	replica   [32]byte // sha256 of the replica id
}

// errStateMalformed and errStateForged are why a requestState does not
// open: not one of ours in shape, or not sealed by this key (tampered,
// forged, or sealed by a gateway with another key).
var (
	errStateMalformed = errors.New("params.requestState is not a requestState this gateway issued (malformed)")
	errStateForged    = errors.New("params.requestState failed authentication: it was altered, or sealed by a gateway with another state key")
)

// stateSealer seals and opens requestStates with one key.
type stateSealer struct{ aead cipher.AEAD }

// newStateSealer returns a sealer for a StateKeySize-byte key.
func newStateSealer(key []byte) (*stateSealer, error) {
	if len(key) != StateKeySize {
		return nil, fmt.Errorf("mw: the state key is %d bytes, want %d", len(key), StateKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &stateSealer{aead: aead}, nil
}

// seal returns st sealed, as the string a client echoes.
func (s *stateSealer) seal(st requestState) string {
	plain := make([]byte, 0, stateSize)
	plain = binary.BigEndian.AppendUint64(plain, uint64(st.expiry.UnixMilli()))
	plain = append(plain, st.hash[:]...)
	plain = append(plain, st.handle.instance[:]...)
	plain = binary.BigEndian.AppendUint64(plain, st.handle.n)
	plain = append(plain, st.principal[:]...)
	plain = append(plain, st.replica[:]...)

	out := make([]byte, 1+stateNonceSize, 1+stateNonceSize+stateSize+s.aead.Overhead())
	out[0] = stateVersion
	_, _ = rand.Read(out[1 : 1+stateNonceSize])
	out = s.aead.Seal(out, out[1:1+stateNonceSize], plain, stateAAD())
	return base64.RawURLEncoding.EncodeToString(out)
}

// open returns the state token seals, or errStateMalformed or
// errStateForged. token is hostile: its length is bounded before it is
// decoded, and nothing of it is read before it is authenticated.
func (s *stateSealer) open(token string) (requestState, error) {
	if len(token) > stateMaxLen {
		return requestState{}, errStateMalformed
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != 1+stateNonceSize+stateSize+s.aead.Overhead() || raw[0] != stateVersion {
		return requestState{}, errStateMalformed
	}
	plain, err := s.aead.Open(nil, raw[1:1+stateNonceSize], raw[1+stateNonceSize:], stateAAD())
	if err != nil || len(plain) != stateSize {
		return requestState{}, errStateForged
	}
	var st requestState
	st.expiry = time.UnixMilli(int64(binary.BigEndian.Uint64(plain[0:8])))
	plain = plain[8:]
	copy(st.hash[:], plain[:32])
	plain = plain[32:]
	copy(st.handle.instance[:], plain[:8])
	st.handle.n = binary.BigEndian.Uint64(plain[8:16])
	plain = plain[16:]
	copy(st.principal[:], plain[:32])
	copy(st.replica[:], plain[32:64])
	return st, nil
}

func stateAAD() []byte { return append([]byte(stateLabel), stateVersion) }

// requestHash is what binds a requestState to its request: the SHA-256
// of a canonical encoding of
//
//   - the method;
//   - the target: params.name (tools/call, prompts/get) or params.uri
//     (resources/read);
//   - params.arguments (tools/call, prompts/get), an absent, null or empty
//     object counting as one and the same "no arguments".
//
// Nothing else of the request is bound: not its id, not params._meta
// (capabilities, progressToken and trace context may change between
// attempts), not inputResponses nor requestState. The encoding is
// canonical, so a client that decodes the call and encodes it again still
// matches: white space is ignored, object members are taken in the order
// of their keys (members with the same key by their encodings), strings
// by their decoded value (escapes resolved), and numbers by their exact
// decimal value (1, 1.0, 10e-1 and 1E0 are one number; no rounding).
func requestHash(m frame.Message) [32]byte {
	h := sha256.New()
	h.Write([]byte("mcp-stdio request v1\x00"))
	writeCanonString(h, m.Method())
	params := m.Params()
	switch m.Method() {
	case "resources/read":
		writeCanon(h, params.Get("uri"), 0)
	default:
		writeCanon(h, params.Get("name"), 0)
		args := params.Get("arguments")
		if !args.Exists() || args.Type == gjson.Null || (args.IsObject() && isEmptyObject(args)) {
			h.Write([]byte{'E'})
		} else {
			writeCanon(h, args, 0)
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// canonDepth bounds the nesting writeCanon descends; deeper values are
// bound by their bytes as they are (still deterministic, only not
// canonical).
const canonDepth = 64

// writeCanon writes the canonical encoding of v to h: a tag byte, then
// lengths and contents, so that no two values share an encoding.
func writeCanon(h hash.Hash, v gjson.Result, depth int) {
	switch {
	case !v.Exists():
		h.Write([]byte{'x'})
	case v.Type == gjson.Null:
		h.Write([]byte{'n'})
	case v.Type == gjson.False:
		h.Write([]byte{'f'})
	case v.Type == gjson.True:
		h.Write([]byte{'t'})
	case v.Type == gjson.Number:
		h.Write([]byte{'d'})
		writeCanonString(h, canonNumber(v.Raw))
	case v.Type == gjson.String:
		h.Write([]byte{'s'})
		writeCanonString(h, v.Str)
	case depth >= canonDepth:
		h.Write([]byte{'r'})
		writeCanonString(h, v.Raw)
	case v.IsArray():
		h.Write([]byte{'a'})
		v.ForEach(func(_, e gjson.Result) bool {
			h.Write([]byte{','})
			writeCanon(h, e, depth+1)
			return true
		})
		h.Write([]byte{']'})
	case v.IsObject():
		type member struct{ key, value string }
		var ms []member
		v.ForEach(func(k, e gjson.Result) bool {
			sub := sha256.New()
			writeCanon(sub, e, depth+1)
			ms = append(ms, member{k.Str, string(sub.Sum(nil))})
			return true
		})
		slices.SortFunc(ms, func(a, b member) int {
			if c := strings.Compare(a.key, b.key); c != 0 {
				return c
			}
			return strings.Compare(a.value, b.value)
		})
		h.Write([]byte{'o'})
		for _, m := range ms {
			writeCanonString(h, m.key)
			h.Write([]byte(m.value))
		}
		h.Write([]byte{'}'})
	default:
		h.Write([]byte{'r'})
		writeCanonString(h, v.Raw)
	}
}

// writeCanonString writes s with its length before it.
func writeCanonString(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// isEmptyObject reports whether the object v has no members.
func isEmptyObject(v gjson.Result) bool {
	empty := true
	v.ForEach(func(_, _ gjson.Result) bool {
		empty = false
		return false
	})
	return empty
}

// canonNumber returns the exact decimal value of the JSON number raw as
// "<sign><digits>e<exponent>", digits without leading or trailing zeros
// ("0" for zero, whatever its sign). A number it cannot read (an exponent
// out of range) is returned as it is.
func canonNumber(raw string) string {
	s := raw
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 1<<30 || e < -(1<<30) {
			return raw
		}
		exp, s = e, s[:i]
	}
	digits := s
	if i := strings.IndexByte(s, '.'); i >= 0 {
		digits = s[:i] + s[i+1:]
		exp -= len(s) - i - 1
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + strconv.Itoa(exp)
}
