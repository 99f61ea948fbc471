package mw

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestAnswerOnceOneAnswerPerRequest(t *testing.T) {
	is := is.New(t)
	srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		switch m.Method() {
		case "": // the client's answer to a server request
			return nil, nil
		case "twice": // the answer twice, then one to an id never sent
			return []frame.Message{answerWith(m, `{"n":1}`), answerWith(m, `{"n":2}`), frame.MustParse(`{"jsonrpc":"2.0","id":99,"result":{}}`)}, nil
		case "answer-then-fail": // answered, then the stream breaks
			return []frame.Message{answerWith(m, `{}`)}, errors.New("stream broke")
		}
		return nil, errors.New("gone")
	}}
	toServer, client := pipeline(srv, AnswerOnce(AnswerOnceOptions{}))
	ctx := t.Context()

	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"twice"}`)))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"answer-then-fail"}`))) // moot
	is.True(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"fail"}`)) != nil)       // the edge answers
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"n":1}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
	})

	// An id is free again once its request is over: a late answer to it
	// is dropped, a new request with it is taken.
	is.NoErr(srv.up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{"late":true}}`)))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"twice"}`)))
	is.Equal(len(client.lines()), 3)

	// What is not a response passes untouched both ways.
	is.NoErr(srv.up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage"}`)))
	is.NoErr(srv.up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/progress"}`)))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"s1","result":{}}`)))
	is.Equal(len(client.lines()), 5)
	is.Equal(srv.sent.lines()[len(srv.sent.lines())-1], `{"jsonrpc":"2.0","id":"s1","result":{}}`)
}

func TestAnswerOnceRefusesAnIDInFlight(t *testing.T) {
	is := is.New(t)
	entered, release := make(chan struct{}), make(chan struct{})
	srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		close(entered)
		<-release
		return []frame.Message{answerWith(m, `{}`)}, nil
	}}
	toServer, client := pipeline(srv, AnswerOnce(AnswerOnceOptions{}))
	ctx := t.Context()
	done := make(chan error)
	go func() { done <- toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"a","method":"slow"}`)) }()
	<-entered
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"a","method":"other"}`)))
	is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"invalid request: a request with this id is already in progress"}}`})
	is.Equal(len(srv.sent.all()), 1) // the second was not forwarded
	close(release)
	is.NoErr(<-done)
	is.Equal(client.lines()[1], `{"jsonrpc":"2.0","id":"a","result":{}}`)
}

func TestAnswerOnceWaitsForAnAnswerElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		elsewhere := fmt.Errorf("HTTP 202: %w", frame.ErrAnswerElsewhere)
		srv := &fakeServer{answer: func(context.Context, frame.Message) ([]frame.Message, error) { return nil, elsewhere }}
		toServer, client := pipeline(srv, AnswerOnce(AnswerOnceOptions{Wait: time.Minute}))
		ctx := t.Context()

		// The answer comes on another stream within the wait.
		done := make(chan error)
		go func() {
			done <- toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
		}()
		synctest.Wait()
		time.Sleep(30 * time.Second)
		is.NoErr(srv.up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{}}`)))
		is.NoErr(<-done)
		is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{}}`})

		// It does not: the wait ends with an error the edge answers with.
		start := time.Now()
		err := toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/call"}`))
		is.Equal(time.Since(start), time.Minute)
		is.True(err != nil && strings.Contains(err.Error(), "no answer within 1m0s"))
		is.True(!errors.Is(err, frame.ErrAnswerElsewhere)) // answered here, not left to wait again

		// The pipeline closes while it waits.
		closing, closeNow := context.WithCancelCause(ctx)
		go func() {
			done <- toServer.Handle(closing, frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"tools/call"}`))
		}()
		synctest.Wait()
		closeNow(frame.ErrClosed)
		is.True(errors.Is(<-done, frame.ErrClosed))
		is.Equal(len(client.lines()), 1)
	})
}
