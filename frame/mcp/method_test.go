package mcp_test

import (
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

func TestClassOf(t *testing.T) {
	const (
		cReq  = mcp.Request | mcp.FromClient
		sReq  = mcp.Request | mcp.FromServer
		sNote = mcp.Notification | mcp.FromServer
	)
	tests := []struct {
		method string
		want   mcp.Class
		list   string
	}{
		{"initialize", cReq | mcp.ReplaySafe | mcp.NeedsSession, ""},
		{"notifications/initialized", mcp.Notification | mcp.FromClient | mcp.NeedsSession, ""},
		{"ping", cReq | mcp.FromServer | mcp.ReplaySafe | mcp.NeedsSession, ""},
		{"notifications/cancelled", mcp.Notification | mcp.FromClient | mcp.FromServer, ""},
		{"notifications/progress", mcp.Notification | mcp.FromClient | mcp.FromServer, ""},
		{"server/discover", cReq | mcp.ReplaySafe | mcp.Cacheable | mcp.StatelessOnly, ""},
		{"subscriptions/listen", cReq | mcp.StatelessOnly, ""},
		{"notifications/subscriptions/acknowledged", sNote | mcp.StatelessOnly, ""},
		{"tools/list", cReq | mcp.ReplaySafe | mcp.Cacheable | mcp.Paginated, "tools"},
		{"prompts/list", cReq | mcp.ReplaySafe | mcp.Cacheable | mcp.Paginated, "prompts"},
		{"resources/list", cReq | mcp.ReplaySafe | mcp.Cacheable | mcp.Paginated, "resources"},
		{"resources/templates/list", cReq | mcp.ReplaySafe | mcp.Cacheable | mcp.Paginated, "resourceTemplates"},
		{"tools/call", cReq | mcp.TakesInput, ""},
		{"prompts/get", cReq | mcp.ReplaySafe | mcp.TakesInput, ""},
		{"resources/read", cReq | mcp.ReplaySafe | mcp.Cacheable | mcp.TakesInput, ""},
		{"resources/subscribe", cReq | mcp.ReplaySafe | mcp.NeedsSession, ""},
		{"resources/unsubscribe", cReq | mcp.ReplaySafe | mcp.NeedsSession, ""},
		{"completion/complete", cReq | mcp.ReplaySafe, ""},
		{"logging/setLevel", cReq | mcp.ReplaySafe | mcp.NeedsSession, ""},
		{"roots/list", sReq | mcp.InputRequest, ""},
		{"sampling/createMessage", sReq | mcp.InputRequest, ""},
		{"elicitation/create", sReq | mcp.InputRequest, ""},
		{"notifications/message", sNote, ""},
		{"notifications/tools/list_changed", sNote, ""},
		{"notifications/prompts/list_changed", sNote, ""},
		{"notifications/resources/list_changed", sNote, ""},
		{"notifications/resources/updated", sNote, ""},
		{"notifications/elicitation/complete", sNote | mcp.NeedsSession, ""},
		{"notifications/roots/list_changed", mcp.Notification | mcp.FromClient | mcp.NeedsSession, ""},
		{"tools/watch", 0, ""},
		{"", 0, ""},
		{"Tools/List", 0, ""},
	}
	names := map[string]string{"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
	stateless := map[string]bool{"server/discover": true, "subscriptions/listen": true, "tools/list": true, "tools/call": true,
		"prompts/list": true, "prompts/get": true, "resources/list": true, "resources/read": true, "resources/templates/list": true,
		"completion/complete": true}
	cacheable := 0
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			is := is.New(t)
			c := mcp.ClassOf(tt.method)
			is.Equal(c, tt.want)
			is.Equal(mcp.IsCacheable(tt.method), c.Has(mcp.Cacheable))
			is.Equal(mcp.IsReplaySafe(tt.method), c.Has(mcp.ReplaySafe))
			is.Equal(mcp.ListKey(tt.method), tt.list)
			is.Equal(tt.list != "", c.Has(mcp.Paginated))
			is.Equal(mcp.NameMember(tt.method), names[tt.method])
			if names[tt.method] != "" {
				is.Equal(mcp.NamePath(tt.method), "params."+names[tt.method])
			} else {
				is.Equal(mcp.NamePath(tt.method), "")
			}
			is.Equal(mcp.IsStatelessClientRequest(tt.method), stateless[tt.method]) // the digest's list (§1)
			if c != 0 {
				is.True(c.Has(mcp.Request) != c.Has(mcp.Notification)) // one or the other
				is.True(c.Has(mcp.FromClient) || c.Has(mcp.FromServer))
				is.True(!(c.Has(mcp.NeedsSession) && c.Has(mcp.StatelessOnly)))
			}
		})
		if tt.want.Has(mcp.Cacheable) {
			cacheable++
		}
	}
	is := is.New(t)
	is.Equal(cacheable, 6) // the six of server/utilities/caching
	is.True(!mcp.IsReplaySafe("tools/call"))
	is.True(!mcp.Class(0).Has(0))
}

// The spelled-out paths are the keys as gjson.Escape writes them.
func TestMetaPaths(t *testing.T) {
	is := is.New(t)
	for path, want := range map[string]string{
		mcp.ParamsProtocolVersion:    "params._meta." + gjson.Escape(mcp.MetaProtocolVersion),
		mcp.ParamsClientCapabilities: "params._meta." + gjson.Escape(mcp.MetaClientCapabilities),
		mcp.ParamsClientInfo:         "params._meta." + gjson.Escape(mcp.MetaClientInfo),
		mcp.ParamsLogLevel:           "params._meta." + gjson.Escape(mcp.MetaLogLevel),
		mcp.ParamsSubscriptionID:     "params._meta." + gjson.Escape(mcp.MetaSubscriptionID),
		mcp.ResultSubscriptionID:     "result._meta." + gjson.Escape(mcp.MetaSubscriptionID),
		mcp.ResultServerInfo:         "result._meta." + gjson.Escape(mcp.MetaServerInfo),
	} {
		is.Equal(path, want)
	}
	for _, k := range []string{mcp.MetaProtocolVersion, mcp.MetaClientCapabilities, mcp.MetaClientInfo, mcp.MetaLogLevel, mcp.MetaServerInfo, mcp.MetaSubscriptionID} {
		is.True(mcp.IsModernMetaKey(k))
	}
	is.True(!mcp.IsModernMetaKey(mcp.MetaTasksExtension))
	is.True(!mcp.IsModernMetaKey("progressToken"))
}

func BenchmarkClassOf(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !mcp.IsCacheable("resources/templates/list") || mcp.IsCacheable("tools/call") {
			b.Fatal("wrong class")
		}
	}
}
