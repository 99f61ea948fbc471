package exampleserver

import (
	"context"
	"encoding/json"

	"github.com/tidwall/gjson"
)

// Roots, with Options.AskRoots: asked of a session-era client once, when
// its connection starts, and kept for the connection.

// askRootsAtStart asks the client for its roots as the connection starts
// and keeps the answer (see Options.AskRoots).
func (s *server) askRootsAtStart(ctx context.Context) {
	s.mu.Lock()
	asked := s.rootsAsked
	s.mu.Unlock()
	defer close(asked)
	reply, ok, err := s.requestClient(ctx, &request{release: func() {}}, "roots/list", object{})
	got := ""
	switch {
	case err != nil || !ok:
		return // the connection ended, or too many requests wait on the client
	case reply.Get("error").Exists():
		got = "error: " + reply.Get("error.message").String()
	default:
		got = reply.Get("result.roots").Raw
	}
	s.mu.Lock()
	s.roots = got
	s.mu.Unlock()
	s.log.Debug("the client's roots, asked at the start", "roots", got)
}

// rootsTool returns the roots the server knows: those it got when the
// connection started (once the answer has come), or with {"ask":true}
// those a roots/list sent now, during the call, gets.
func (s *server) rootsTool(ctx context.Context, req *request, args gjson.Result) (object, error) {
	if !args.Get("ask").Bool() {
		s.mu.Lock()
		asked := s.rootsAsked
		s.mu.Unlock()
		if asked != nil {
			req.release() // waits on the client's answer, which the read loop brings
			select {
			case <-asked:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		s.mu.Lock()
		got := s.roots
		s.mu.Unlock()
		return rootsResult("at the start", got), nil
	}
	if req.stateless {
		return errorResult("roots asks for roots on a session-era connection only"), nil
	}
	if !req.caps.Get("roots").IsObject() {
		return errorResult("roots needs a client that declares the roots capability"), nil
	}
	reply, ok, err := s.requestClient(ctx, req, "roots/list", object{})
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return errorResult("the client did not answer roots/list (stdin closed or too many requests pending)"), nil
	case reply.Get("error").Exists():
		return rootsResult("now", "error: "+reply.Get("error.message").String()), nil
	}
	return rootsResult("now", reply.Get("result.roots").Raw), nil
}

// rootsResult is the roots tool's result for what a roots/list got (see
// server.roots), asked when.
func rootsResult(when, got string) object {
	switch {
	case got == "":
		return textResult("no roots: none were asked for, or no answer came yet")
	case len(got) > 7 && got[:7] == "error: ":
		return errorResult("roots/list asked %s failed: %s", when, got[7:])
	}
	res := textResult("roots asked " + when + ": " + got)
	res["structuredContent"] = object{"roots": json.RawMessage(got)}
	return res
}
