package server

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Principal is who a verified access token names.
type Principal struct {
	Issuer, Subject string // Key() = Issuer + " " + Subject keys the pool
	ClientID        string
	Scopes          []string
	Expiry          time.Time
}

// Key returns Issuer + " " + Subject: the principal as the gate hands it
// on (mw.WithPrincipal), which keys the 2026-07-28 pool and the ownership
// of session-era sessions. Two issuers naming the same subject are two
// principals.
func (p Principal) Key() string { return p.Issuer + " " + p.Subject }

// Verifier checks an access token presented to this resource. It returns
// ErrInvalidToken (wrapped, with a reason that never contains the token)
// for a token that is not valid here: unknown, expired, revoked, wrong
// audience/resource, bad signature. Other errors mean it could not decide
// (the IdP unreachable): the gate answers 503.
type Verifier interface {
	Verify(ctx context.Context, token string) (Principal, error)
}

// ErrInvalidToken is the error, wrapped, of a [Verifier] refusing a token.
var ErrInvalidToken = errors.New("invalid token")

// Verifiers tries each in turn (several issuers): the first that accepts wins.
func Verifiers(vs ...Verifier) Verifier {
	return verifiers(append([]Verifier(nil), vs...))
}

type verifiers []Verifier

// Verify returns the first acceptance. When none accepts, it returns an
// error that cannot decide if any verifier could not decide (so a token
// another issuer might have accepted is not refused while that issuer is
// unreachable), else the first refusal. With no verifiers every token is
// refused.
func (vs verifiers) Verify(ctx context.Context, token string) (Principal, error) {
	var refusal, undecided error
	for _, v := range vs {
		p, err := v.Verify(ctx, token)
		if err == nil {
			return p, nil
		}
		if errors.Is(err, ErrInvalidToken) {
			if refusal == nil {
				refusal = err
			}
		} else if undecided == nil {
			undecided = err
		}
	}
	switch {
	case undecided != nil:
		return Principal{}, undecided
	case refusal != nil:
		return Principal{}, refusal
	}
	return Principal{}, fmt.Errorf("%w: no verifier configured", ErrInvalidToken)
}
