package server

import (
	"context"
	"errors"
	"time"
)

// Placeholder for part A's declarations (issue 13): A's verifier.go wins
// on merge.

// Principal is who a verified access token names.
type Principal struct {
	Issuer, Subject string // Key() = Issuer + " " + Subject keys the pool
	ClientID        string
	Scopes          []string
	Expiry          time.Time
}

// Key is the principal's key: issuer and subject.
func (p Principal) Key() string { return p.Issuer + " " + p.Subject }

// Verifier checks an access token presented to this resource. It returns
// ErrInvalidToken (wrapped, with a reason that never contains the token)
// for a token that is not valid here: unknown, expired, revoked, wrong
// audience/resource, bad signature. Other errors mean it could not decide
// (the IdP unreachable): the gate answers 503.
type Verifier interface {
	Verify(ctx context.Context, token string) (Principal, error)
}

// ErrInvalidToken is the error of a token that is not valid here.
var ErrInvalidToken = errors.New("invalid token")

// Verifiers tries each in turn (several issuers): the first that accepts wins.
func Verifiers(vs ...Verifier) Verifier { return verifiers(vs) }

type verifiers []Verifier

func (vs verifiers) Verify(ctx context.Context, token string) (Principal, error) {
	err := error(ErrInvalidToken)
	for _, v := range vs {
		p, e := v.Verify(ctx, token)
		if e == nil {
			return p, nil
		}
		if !errors.Is(e, ErrInvalidToken) {
			err = e
		}
	}
	return Principal{}, err
}
