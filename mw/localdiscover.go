package mw

import (
	"context"
	"log/slog"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// LocalDiscoverOptions configures [LocalDiscover].
type LocalDiscoverOptions struct {
	// SupportedVersions are the versions the DiscoverResult lists; nil
	// means the revisions of the stateless era ([mcp.StatelessVersions]:
	// 2026-07-28 alone today).
	SupportedVersions []string
	// KeepResourceSubscribe says whether the capabilities keep
	// resources.subscribe, given the server's capabilities (the
	// initialize result's). A 2026-07-28 client hears of a resource's
	// change only on a subscriptions/listen, so the flag stays only where
	// something in front serves listen's resourceSubscriptions with the
	// server's resources/subscribe (serve does, for a child that
	// advertises it). nil removes it.
	KeepResourceSubscribe func(capabilities gjson.Result) bool
	// Logger receives a debug line for each server/discover answered;
	// nil discards.
	Logger *slog.Logger
}

// LocalDiscover returns the era bridge that answers a 2026-07-28 client's
// server/discover for a server of the session era, which does not know
// the method: serve lists it in the entry chain of a child that speaks
// only the session era, and the relay in its session-era chain for a
// 2026-07-28 host (see the package documentation).
//
// A server-bound server/discover request is never forwarded. It is
// answered from the server's initialize result, which the gateway's own
// handshake ([Initialize], [HandshakeForModern]) or the client's put in
// the connection ([ConnOf], [Conn.ServerInitialize]):
//
//	{"resultType":"complete",
//	 "supportedVersions":SupportedVersions,
//	 "capabilities":<the result's, resources.subscribe removed unless KeepResourceSubscribe>,
//	 "instructions":<the result's, when it has them>,
//	 "_meta":{"io.modelcontextprotocol/serverInfo":<the result's serverInfo>}}
//
// Every value is copied byte for byte from the initialize result. The
// cache hints a DiscoverResult requires, ttlMs and cacheScope, are
// [StampResults]'s to add, which is listed outside this stage. Without an
// initialize result (no handshake was made) the request is answered with
// the error -32603. Everything else passes, both ways.
func LocalDiscover(o LocalDiscoverOptions) Middleware {
	versions := o.SupportedVersions
	if versions == nil {
		versions = mcp.StatelessVersions()
	}
	list := []byte{'['}
	for i, v := range versions {
		if i > 0 {
			list = append(list, ',')
		}
		list = append(list, jsonString(v)...)
	}
	list = append(list, ']')
	log := loggerOrDiscard(o.Logger)
	return func(next Duplex) Duplex {
		return Duplex{
			ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				if m.Kind() != frame.Request || m.Method() != "server/discover" {
					return next.ToServer.Handle(ctx, m)
				}
				var init frame.Message
				var ok bool
				if c := ConnOf(ctx); c != nil {
					init, ok = c.ServerInitialize()
				}
				if !ok {
					log.Debug("server/discover: no initialize result to answer it from", "id", m.ID().String())
					return next.ToClient.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeInternalError, "server/discover: the server's initialize result is not known"))
				}
				log.Debug("server/discover answered from the server's initialize result", "id", m.ID().String())
				return next.ToClient.Handle(ctx, frame.ResultResponse(m.ID(), discoverFromInitialize(init, list, o.KeepResourceSubscribe)))
			}),
			ToClient: next.ToClient,
		}
	}
}

// discoverFromInitialize returns the DiscoverResult (without cache hints)
// of the session-era initialize result message init: versions is the raw
// supportedVersions array, keep says whether resources.subscribe stays.
func discoverFromInitialize(init frame.Message, versions []byte, keep func(gjson.Result) bool) []byte {
	caps := init.Get("result.capabilities")
	capsRaw := []byte("{}")
	if caps.IsObject() {
		capsRaw = []byte(caps.Raw)
		if caps.Get("resources.subscribe").Exists() && (keep == nil || !keep(caps)) {
			if out, err := sjson.DeleteBytes(capsRaw, "resources.subscribe"); err == nil {
				capsRaw = out
			}
		}
	}
	entries := make([]metaEntry, 0, 5)
	entries = append(entries,
		metaEntry{"resultType", []byte(`"complete"`)},
		metaEntry{"supportedVersions", versions},
		metaEntry{"capabilities", capsRaw},
	)
	if v := init.Get("result.instructions"); v.Type == gjson.String {
		entries = append(entries, metaEntry{"instructions", []byte(v.Raw)})
	}
	if v := init.Get("result.serverInfo"); v.IsObject() {
		entries = append(entries, metaEntry{"_meta", metaObject([]metaEntry{{MetaServerInfo, []byte(v.Raw)}})})
	}
	return metaObject(entries)
}
