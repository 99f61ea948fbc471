package mcp_test

import (
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Claims's one pass over _meta finds what a path walk to each key finds,
// in every shape a valid request's params can take: keys missing,
// escaped, behind a decoy object named like their prefix, or a _meta
// that is not an object.
func TestClaimsReadWhatPathsRead(t *testing.T) {
	is := is.New(t)
	version := "_meta." + gjson.Escape(mcp.MetaProtocolVersion)
	caps := "_meta." + gjson.Escape(mcp.MetaClientCapabilities)
	for _, params := range []string{
		`{}`,
		`{"name":"echo"}`,
		`{"_meta":{}}`,
		`{"_meta":"2026-07-28"}`,
		`{"_meta":["io.modelcontextprotocol/protocolVersion"]}`,
		`{"_meta":null}`,
		`{"_meta":{"io.modelcontextprotocol":{"protocolVersion":"x"}}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}`,
		`{"name":"echo","arguments":{"_meta":{"io.modelcontextprotocol/protocolVersion":"no"}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}}`,
		`{"_meta":{"io.modelcontextprotocol\/protocolVersion":7,"io.modelcontextprotocol\u002fclientCapabilities":[]}}`,
		`{"_meta":{"progressToken":1,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	} {
		p := gjson.Parse(params)
		gotVersion, gotCaps := mcp.Claims(p.Get("_meta"))
		is.Equal(gotVersion.Raw, p.Get(version).Raw) // version of params
		is.Equal(gotVersion.Index, p.Get(version).Index)
		is.Equal(gotCaps.Raw, p.Get(caps).Raw) // capabilities of params
		is.Equal(gotCaps.Index, p.Get(caps).Index)
	}
}
