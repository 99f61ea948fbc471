package mcp_test

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// A stage asks what a revision has and what a method is instead of
// spelling either; the gateway's own messages come from here.
func Example() {
	for _, r := range mcp.Revisions() {
		fmt.Println(r.Version, "session era:", r.SessionEra(), "batches:", r.Has(mcp.Batches), "listen:", r.Has(mcp.Listen))
	}
	c := mcp.ClassOf(mcp.MethodResourcesRead)
	fmt.Println("resources/read cacheable:", c.Has(mcp.Cacheable), "replay-safe:", c.Has(mcp.ReplaySafe))
	fmt.Println("ping in 2026-07-28:", mcp.Defines(mcp.ModernVersion, mcp.MethodPing))

	// A server refused the version of a server/discover: ask again at the
	// one it names, once.
	refusal := frame.MustParse(`{"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2025-11-25","2026-07-28"]}}}`)
	if v, ok := mcp.DiscoverRetryVersion(refusal, mcp.StatelessVersions()); ok {
		fmt.Println(mcp.DiscoverRequest("1", []byte(`{"`+mcp.MetaProtocolVersion+`":"`+v+`","`+mcp.MetaClientCapabilities+`":{}}`)))
	}
	// Output:
	// 2024-11-05 session era: true batches: true listen: false
	// 2025-03-26 session era: true batches: true listen: false
	// 2025-06-18 session era: true batches: false listen: false
	// 2025-11-25 session era: true batches: false listen: false
	// 2026-07-28 session era: false batches: false listen: true
	// resources/read cacheable: true replay-safe: true
	// ping in 2026-07-28: false
	// {"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
}

func ExampleClaims() {
	meta := gjson.Parse(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`)
	version, caps := mcp.Claims(meta)
	fmt.Println(version.Str, caps.Raw)
	// Output:
	// 2026-07-28 {"sampling":{}}
}
