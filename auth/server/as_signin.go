package server

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// How the person on the consent page proves who they are: a one-time code
// (the owner, who sees serve's stderr) or a user name and password from a
// bcrypt file. Wrong answers are limited per source, so that a guesser
// slows down only itself, never someone else's sign-in; guesses spread
// over many sources are bounded by each one-time code's budget of wrong
// answers (then it is replaced), and password checks by how many run at
// once.

// Sign-in limits.
const (
	// failureBurst wrong answers are allowed from one source, and one
	// more each failureEvery (ten a minute); beyond, that source's answers
	// are refused unchecked (429 with Retry-After). Other sources are not
	// slowed.
	failureBurst = 10
	failureEvery = 6 * time.Second
	// maxWrongPerCode wrong answers, from whatever sources, spend a
	// one-time code: a new one replaces it (and is printed as every new
	// one is). Against a code of 60 bits that leaves a guesser a chance of
	// 1 in 10^14 per code, and a flood from a thousand sources replaces it
	// about once a minute at most.
	maxWrongPerCode = 10000
	// maxPasswordChecks bcrypt comparisons run at once; more answers wait
	// for their turn (each costs tens of milliseconds of a core).
	maxPasswordChecks = 2
	// maxAttemptsPerPage wrong answers void a consent page.
	maxAttemptsPerPage = 5
	// signInCodeLen is the one-time code's length, in symbols of
	// signInAlphabet (5 bits each: 60 bits).
	signInCodeLen = 12
)

// signInAlphabet has no symbols that are easy to confuse (0/O, 1/I/L, U/V).
const signInAlphabet = "ABCDEFGHJKMNPQRSTWXYZ23456789"

// OwnerSubject is the subject of the person who signs in with the one-time
// code: whoever can read serve's stderr.
const OwnerSubject = "owner"

// newSignInCode returns a fresh one-time code, in groups of four.
func newSignInCode() string {
	var sb strings.Builder
	for i := range signInCodeLen {
		if i > 0 && i%4 == 0 {
			sb.WriteByte('-')
		}
		sb.WriteByte(signInAlphabet[randIntn(len(signInAlphabet))])
	}
	return sb.String()
}

// randIntn returns a uniform random int in [0, n), n ≤ 256.
func randIntn(n int) int {
	limit := 256 - 256%n
	var b [1]byte
	for {
		_, _ = rand.Read(b[:])
		if int(b[0]) < limit {
			return int(b[0]) % n
		}
	}
}

// normalizeCode upper-cases a typed code and drops spaces and dashes.
func normalizeCode(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == ' ' || r == '\t':
			return -1
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

// codeMatches compares a typed code with the current one in constant time.
func codeMatches(typed, current string) bool {
	return current != "" && subtle.ConstantTimeCompare([]byte(normalizeCode(typed)), []byte(normalizeCode(current))) == 1
}

// Passwords is a parsed password file: user name to bcrypt hash.
type Passwords struct {
	users map[string][]byte
	dummy []byte // compared for unknown users, so they take as long
}

// maxPasswordFile bounds a password file.
const maxPasswordFile = 1 << 20

// ParsePasswordFile reads `user:bcrypt-hash` lines (as `htpasswd -nB`
// writes them); blank lines and lines starting with # are skipped. A
// user name is non-empty and has no colon or white space; the hash must be
// a bcrypt hash. Errors name the line.
func ParsePasswordFile(r io.Reader) (*Passwords, error) {
	p := &Passwords{users: map[string][]byte{}}
	sc := bufio.NewScanner(io.LimitReader(r, maxPasswordFile))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" || strings.ContainsAny(user, " \t") {
			return nil, fmt.Errorf("line %d: want user:bcrypt-hash", n)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("line %d: the hash of %q is not a bcrypt hash (make one with htpasswd -nB %s)", n, user, user)
		}
		if _, dup := p.users[user]; dup {
			return nil, fmt.Errorf("line %d: user %q is listed twice", n, user)
		}
		p.users[user] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(p.users) == 0 {
		return nil, fmt.Errorf("no user:bcrypt-hash line")
	}
	for _, h := range p.users {
		cost, _ := bcrypt.Cost(h)
		d, err := bcrypt.GenerateFromPassword([]byte("not a password"), cost)
		if err != nil {
			return nil, err
		}
		p.dummy = d
		break
	}
	return p, nil
}

// check reports whether password is user's.
func (p *Passwords) check(user, password string) bool {
	h, ok := p.users[user]
	if !ok {
		_ = bcrypt.CompareHashAndPassword(p.dummy, []byte(password))
		return false
	}
	return bcrypt.CompareHashAndPassword(h, []byte(password)) == nil
}
