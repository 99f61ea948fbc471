package server

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// How the person on the consent page proves who they are: a one-time code
// (the owner, who sees serve's stderr) or a user name and password from a
// bcrypt file. Wrong answers are limited for the whole server, whoever
// sends them: a guesser cannot spread attempts over addresses.

// Sign-in limits.
const (
	// maxFailures wrong answers are allowed per failureWindow; beyond,
	// every answer is refused unchecked until the window has passed.
	maxFailures   = 10
	failureWindow = time.Minute
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

// failureLimiter counts wrong sign-in answers in fixed windows, for the
// whole server: its memory is two numbers.
type failureLimiter struct {
	now func() time.Time

	mu     sync.Mutex
	start  time.Time // of the current window
	failed int
}

func newFailureLimiter(now func() time.Time) *failureLimiter {
	return &failureLimiter{now: now}
}

// allow reports whether an answer may be checked now: false once
// maxFailures wrong ones came in the current window.
func (l *failureLimiter) allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	return l.failed < maxFailures
}

// fail counts a wrong answer.
func (l *failureLimiter) fail() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	l.failed++
}

func (l *failureLimiter) roll() {
	if now := l.now(); now.Sub(l.start) >= failureWindow || now.Before(l.start) {
		l.start, l.failed = now, 0
	}
}
