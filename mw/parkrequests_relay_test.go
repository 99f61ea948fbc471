package mw

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// The relay's ParkChildRequests (AwaitRetryAnswers): the call's Handle
// runs until the server's response, and a retry's Handle returns only once
// something went out under its id.

// awaitRetries is the relay's option.
func awaitRetries(o *ParkOptions) { o.AwaitRetryAnswers = true }

// goSend sends m on a goroutine of the bubble and returns its Handle's
// result, once there is one.
func (e *parkEnv) goSend(m string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.send(m) }()
	return done
}

// running fails the test when done has a result already: the bubble is
// settled, so a Handle that has not returned is blocked.
func running(t *testing.T, done <-chan error) {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-done:
		t.Fatalf("Handle returned (%v) before its answer went out", err)
	default:
	}
}

func TestParkAwaitRetryAnswersWaitsForTheOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		e, state := parked(t, awaitRetries)
		done := e.goSend(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state))
		running(t, done)
		is.Equal(e.child.sent.lines()[1:], []string{`{"jsonrpc":"2.0","id":7,"result":` + parkAccept + `}`})

		e.fromChild(parkOutcome)
		is.NoErr(<-done)
		is.Equal(e.client.all()[1].String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{"content":[{"type":"text","text":"hi Ada"}]}}`)
	})
}

func TestParkAwaitRetryAnswersReturnsAtTheNextRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		e, state := parked(t, awaitRetries)
		done := e.goSend(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state))
		running(t, done)
		e.fromChild(parkSample)
		is.NoErr(<-done)
		is.Equal(e.client.all()[1].ID(), frame.ID(`"mcp-stdio/serve/2"`))
		is.Equal(e.client.all()[1].Get("result.resultType").String(), "input_required")
	})
}

func TestParkAwaitRetryAnswersHeldOutcomeReturnsAtOnce(t *testing.T) {
	is := is.New(t)
	e, state := parked(t, awaitRetries)
	e.fromChild(parkOutcome)
	e.must(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state))
	is.Equal(e.client.all()[1].ID(), frame.ID(`"mcp-stdio/serve/2"`))
}

// relayCall starts the call as the relay's chain runs it: its Handle at
// the child returns only when fail is given an error, or nil.
func relayCall(t *testing.T, e *parkEnv) (fail chan<- error, call <-chan error) {
	f := make(chan error)
	e.child.answer = func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		if m.Method() == "tools/call" {
			return nil, <-f
		}
		return nil, nil
	}
	c := e.goSend(parkCall("1", `{}`, parkAllCaps, ""))
	synctest.Wait()
	e.fromChild(parkElicit)
	return f, c
}

func TestParkAwaitRetryAnswersFailsWithTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		e := newParkEnv(t, awaitRetries)
		fail, call := relayCall(t, e)
		done := e.goSend(parkRetry("2", `{}`, `{"input-1":`+parkAccept+`}`, e.lastState()))
		running(t, done)

		lost := errors.New("the stream broke")
		fail <- lost
		is.Equal(<-call, lost)
		is.Equal(<-done, lost) // the retry fails with the call
		is.Equal(len(e.client.all()), 1)
	})
}

func TestParkAwaitRetryAnswersAnswerElsewhereKeepsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		e := newParkEnv(t, awaitRetries)
		fail, call := relayCall(t, e)
		state := e.lastState()
		fail <- frame.ErrAnswerElsewhere // the server answers on its GET stream
		is.True(errors.Is(<-call, frame.ErrAnswerElsewhere))

		// The retry's Handle says so too: the edge waits for its answer.
		err := e.send(parkRetry("2", `{}`, `{"input-1":`+parkAccept+`}`, state))
		is.True(errors.Is(err, frame.ErrAnswerElsewhere))
		e.fromChild(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"content":[]}}`)
		is.Equal(e.client.all()[1].String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{"content":[]}}`)
	})
}

func TestParkAwaitRetryAnswersEndsWithACancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		e, state := parked(t, awaitRetries)
		done := e.goSend(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state))
		running(t, done)
		e.must(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/serve/2"}}`)
		is.True(errors.Is(<-done, frame.ErrCancelled))
	})
}

func TestParkAwaitRetryAnswersEndsWithTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		e, state := parked(t, awaitRetries)
		done := e.goSend(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state))
		running(t, done)
		gone := errors.New("relay ended")
		e.conn.Close(gone)
		is.Equal(<-done, gone)
	})
}

func TestParkAwaitRetryAnswersEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		e, state := parked(t, awaitRetries)
		ctx, cancel := context.WithCancelCause(e.ctx)
		done := make(chan error, 1)
		go func() {
			done <- e.toServer.Handle(ctx, frame.MustParse(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state)))
		}()
		running(t, done)
		cancel(frame.ErrClosed)
		is.Equal(<-done, frame.ErrClosed)
	})
}
