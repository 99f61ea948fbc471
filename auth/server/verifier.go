package server

// Placeholder for part A's verifier.go (issue 13): the declarations of the
// contract, byte-identical, so that part D builds before A lands. A's file
// replaces this one on merge.

import (
	"context"
	"errors"
	"time"
)

// Principal is who a verified access token names.
type Principal struct {
	Issuer, Subject string // Key() = Issuer + " " + Subject keys the pool
	ClientID        string
	Scopes          []string
	Expiry          time.Time
}

// Key returns Issuer + " " + Subject.
func (p Principal) Key() string { return p.Issuer + " " + p.Subject }

// Verifier checks an access token presented to this resource. It returns
// ErrInvalidToken (wrapped, with a reason that never contains the token)
// for a token that is not valid here: unknown, expired, revoked, wrong
// audience/resource, bad signature. Other errors mean it could not decide
// (the IdP unreachable): the gate answers 503.
type Verifier interface {
	Verify(ctx context.Context, token string) (Principal, error)
}

// ErrInvalidToken is wrapped by every refusal of a token.
var ErrInvalidToken = errors.New("invalid token")

// Verifiers tries each in turn (several issuers): the first that accepts wins.
func Verifiers(vs ...Verifier) Verifier { return verifiers(vs) }

type verifiers []Verifier

func (vs verifiers) Verify(ctx context.Context, token string) (Principal, error) {
	var undecided error
	for _, v := range vs {
		p, err := v.Verify(ctx, token)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, ErrInvalidToken) && undecided == nil {
			undecided = err
		}
	}
	if undecided != nil {
		return Principal{}, undecided
	}
	return Principal{}, ErrInvalidToken
}
