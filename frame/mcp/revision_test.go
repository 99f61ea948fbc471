package mcp_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// One row per revision: what it has and what it lacks, as its schema and
// the digest say.
func TestRevisions(t *testing.T) {
	all := []mcp.Feature{mcp.Handshake, mcp.Sessions, mcp.ServerRequests, mcp.HTTPSSE, mcp.StreamableHTTP, mcp.Batches,
		mcp.Resumption, mcp.VersionHeader, mcp.PrimingEvents, mcp.MetaHandshake, mcp.RoutingHeaders, mcp.Discover,
		mcp.InputRequired, mcp.Listen, mcp.CacheHints}
	tests := []struct {
		version    string
		sessionEra bool
		has        []mcp.Feature
		// methods the revision defines, or does not ("!" prefix)
		methods []string
	}{
		{mcp.Version20241105, true,
			[]mcp.Feature{mcp.Handshake, mcp.Sessions, mcp.ServerRequests, mcp.HTTPSSE, mcp.Batches},
			[]string{"initialize", "ping", "logging/setLevel", "!server/discover", "!subscriptions/listen", "tools/call"}},
		{mcp.Version20250326, true,
			[]mcp.Feature{mcp.Handshake, mcp.Sessions, mcp.ServerRequests, mcp.StreamableHTTP, mcp.Batches, mcp.Resumption},
			[]string{"initialize", "notifications/initialized", "!server/discover", "resources/subscribe"}},
		{mcp.Version20250618, true,
			[]mcp.Feature{mcp.Handshake, mcp.Sessions, mcp.ServerRequests, mcp.StreamableHTTP, mcp.Resumption, mcp.VersionHeader},
			[]string{"initialize", "elicitation/create", "!notifications/subscriptions/acknowledged"}},
		{mcp.Version20251125, true,
			[]mcp.Feature{mcp.Handshake, mcp.Sessions, mcp.ServerRequests, mcp.StreamableHTTP, mcp.Resumption, mcp.VersionHeader, mcp.PrimingEvents},
			[]string{"initialize", "notifications/elicitation/complete", "!server/discover", "!subscriptions/listen"}},
		{mcp.Version20260728, false,
			[]mcp.Feature{mcp.StreamableHTTP, mcp.VersionHeader, mcp.MetaHandshake, mcp.RoutingHeaders, mcp.Discover, mcp.InputRequired, mcp.Listen, mcp.CacheHints},
			[]string{"!initialize", "!notifications/initialized", "!ping", "!logging/setLevel", "!resources/subscribe",
				"!notifications/roots/list_changed", "!notifications/elicitation/complete", "server/discover", "subscriptions/listen",
				"notifications/subscriptions/acknowledged", "tools/call", "elicitation/create", "notifications/cancelled"}},
	}
	var seen []string
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			is := is.New(t)
			r, ok := mcp.Lookup(tt.version)
			is.True(ok)
			is.Equal(r.Version, tt.version)
			is.True(mcp.Known(tt.version))
			is.Equal(r.SessionEra(), tt.sessionEra)
			is.Equal(mcp.IsSessionEra(tt.version), tt.sessionEra)
			is.Equal(mcp.IsStateless(tt.version), !tt.sessionEra)
			for _, f := range all {
				is.Equal(r.Has(f), slices.Contains(tt.has, f)) // feature f
				is.Equal(mcp.Has(tt.version, f), r.Has(f))
			}
			for _, m := range tt.methods {
				want := !strings.HasPrefix(m, "!")
				is.Equal(mcp.Defines(tt.version, strings.TrimPrefix(m, "!")), want) // the revision defines m
			}
		})
		seen = append(seen, tt.version)
	}
	is := is.New(t)
	var listed []string
	for _, r := range mcp.Revisions() {
		listed = append(listed, r.Version)
	}
	is.Equal(listed, seen) // every revision has its row, oldest first
	is.True(slices.IsSorted(listed))
	is.Equal(mcp.StatelessVersions(), []string{mcp.ModernVersion})
	is.True(mcp.IsSessionEra(mcp.LatestSessionEraVersion))
	is.True(!mcp.Has(mcp.UnversionedVersion, mcp.VersionHeader))
	is.True(mcp.Has(mcp.Version20250618, mcp.VersionHeader)) // the header came with 2025-06-18
	for _, v := range []string{"", "2025-11-26", "2026-07-28 ", "2024-11-05\x00"} {
		is.True(!mcp.Known(v))
		is.True(!mcp.IsSessionEra(v))
		is.True(!mcp.IsStateless(v))
	}
	is.True(!mcp.Has(mcp.ModernVersion, 0)) // no feature is not a feature
}

// Revisions hands out a copy.
func TestRevisionsCopy(t *testing.T) {
	is := is.New(t)
	rs := mcp.Revisions()
	rs[0].Version = "changed"
	is.True(mcp.Known(mcp.Version20241105))
}

// Has is on the per-message path (a session's batches, its priming
// events, a version header): no allocation.
func BenchmarkHas(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !mcp.Has("2025-11-25", mcp.PrimingEvents) || mcp.Known("2025-11-26") {
			b.Fatal("wrong answer")
		}
	}
}
