package exampleserver

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Resource URIs.
const (
	counterURI   = "example://counter"
	readmeURI    = "example://readme"
	echoTemplate = "example://echo/{text}"
	echoPrefix   = "example://echo/"
)

// resource is a listed resource.
type resource struct {
	uri, name, description, mimeType string
}

// resourceTable lists the resources in resources/list order.
var resourceTable = []resource{
	{counterURI, "counter", "The number of tool calls so far. Subscribe to it to hear about every call.", "text/plain"},
	{readmeURI, "readme", "What this server is. It never changes.", "text/markdown"},
}

const readmeText = "# mcp-stdio example server\n\n" +
	"A dual-era MCP stdio server: it answers `initialize` (2024-11-05 to 2025-11-25) " +
	"and `server/discover` (2026-07-28). See the tools, the counter resource and the greet prompt.\n"

// findResource returns the listed resource uri, or nil.
func findResource(uri string) *resource {
	for i := range resourceTable {
		if resourceTable[i].uri == uri {
			return &resourceTable[i]
		}
	}
	return nil
}

func (s *server) listResources(_ context.Context, req *request) (object, error) {
	rs, next, err := paginate(s, req, resourceTable)
	if err != nil {
		return nil, err
	}
	defs := make([]object, len(rs))
	for i, r := range rs {
		defs[i] = object{"uri": r.uri, "name": r.name, "description": r.description, "mimeType": r.mimeType}
	}
	return page("resources", defs, next), nil
}

func (s *server) listTemplates(_ context.Context, req *request) (object, error) {
	ts, next, err := paginate(s, req, []object{{
		"uriTemplate": echoTemplate,
		"name":        "echo",
		"description": "Reads back its {text}, percent-decoded.",
		"mimeType":    "text/plain",
	}})
	if err != nil {
		return nil, err
	}
	return page("resourceTemplates", ts, next), nil
}

// readResource answers resources/read.
func (s *server) readResource(_ context.Context, req *request) (object, error) {
	uri, err := uriParam(req)
	if err != nil {
		return nil, err
	}
	var text, mime string
	switch {
	case uri == counterURI:
		s.mu.Lock()
		text, mime = strconv.FormatInt(s.toolCalls, 10), "text/plain"
		s.mu.Unlock()
	case uri == readmeURI:
		text, mime = readmeText, "text/markdown"
	case strings.HasPrefix(uri, echoPrefix):
		t, err := url.PathUnescape(strings.TrimPrefix(uri, echoPrefix))
		if err != nil {
			return nil, invalidParams("bad percent-encoding in %q", uri)
		}
		text, mime = t, "text/plain"
	default:
		return nil, resourceNotFound(req, uri)
	}
	return object{"contents": []object{{"uri": uri, "mimeType": mime, "text": text}}}, nil
}

// readHint is the cache advice for resources/read: the counter changes with
// every tool call, the rest never.
func (s *server) readHint(req *request) cacheHint {
	if req.params.Get("uri").String() == counterURI {
		return noCache
	}
	return staticCache
}

// subscribe is the session-era resources/subscribe.
func (s *server) subscribe(_ context.Context, req *request) (object, error) {
	uri, err := uriParam(req)
	if err != nil {
		return nil, err
	}
	if findResource(uri) == nil {
		return nil, resourceNotFound(req, uri)
	}
	s.notifyMu.Lock()
	s.subscribed[uri] = true
	s.notifyMu.Unlock()
	s.log.Debug("subscribed", "uri", uri)
	return object{}, nil
}

// unsubscribe is the session-era resources/unsubscribe.
func (s *server) unsubscribe(_ context.Context, req *request) (object, error) {
	uri, err := uriParam(req)
	if err != nil {
		return nil, err
	}
	s.notifyMu.Lock()
	delete(s.subscribed, uri)
	s.notifyMu.Unlock()
	return object{}, nil
}

func uriParam(req *request) (string, error) {
	uri := req.params.Get("uri")
	if uri.Type != gjson.String {
		return "", invalidParams("%s needs params.uri (a string)", req.method)
	}
	return uri.Str, nil
}

// resourceNotFound is -32002 up to 2025-11-25 and -32602 from 2026-07-28.
func resourceNotFound(req *request, uri string) *rpcError {
	code := -32002
	if req.stateless {
		code = frame.CodeInvalidParams
	}
	return &rpcError{code: code, message: "resource not found: " + uri, data: object{"uri": uri}}
}
