package mw

import (
	"context"
	"log/slog"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// LocalAnswersOptions configures [LocalAnswers].
type LocalAnswersOptions struct {
	// Logger receives a debug line for each message answered or dropped;
	// nil discards.
	Logger *slog.Logger
}

// LocalAnswers returns the stage that answers, for a 2026-07-28 server,
// what a session-era client sends that such a server no longer takes:
// the handshake, ping, logging/setLevel and roots/list_changed. The
// relay's chain for a 2026-07-28 server lists it first (see the package
// documentation), outside [InjectMeta], which stamps every other request
// with what the handshake told.
//
// It acts only while the connection ([ConnOf]) speaks 2026-07-28, and only
// on messages of a session-era client ([ClassifyEra]); a 2026-07-28
// client's messages pass. Server-bound:
//
//   - initialize is answered from the server's DiscoverResult
//     ([Conn.Discovery]): protocolVersion echoes the client's when it is
//     a revision of the session era ([mcp.IsSessionEra]), else
//     [mcp.LatestSessionEraVersion]; capabilities and
//     instructions are the DiscoverResult's, serverInfo its _meta's
//     io.modelcontextprotocol/serverInfo — each only when the server
//     said it: nothing is made up for a member it left out. The request
//     and the answer are recorded as the connection's handshake
//     ([Conn.Initialized]). Without a DiscoverResult (the server named
//     its era by an error, or --era modern spoke 2026-07-28 to a server
//     that never said it does) there is nothing to answer from: the
//     initialize gets -32000 saying so, with why the connection speaks
//     2026-07-28 ([Conn.EraReason]), and nothing is recorded.
//   - notifications/initialized is swallowed.
//   - ping is answered {}.
//   - logging/setLevel is answered {}, and its level recorded
//     ([Conn.SetLogLevel]) for InjectMeta to put on every request.
//   - notifications/roots/list_changed is dropped: a 2026-07-28 server
//     asks for roots with each request that needs them.
//
// Everything else passes, and client-bound traffic passes untouched.
func LocalAnswers(o LocalAnswersOptions) Middleware {
	log := loggerOrDiscard(o.Logger)
	return func(next Duplex) Duplex {
		return Duplex{
			ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				c := ConnOf(ctx)
				if c == nil || c.Era() != EraStateless || ClassifyEra(m) != EraSession {
					return next.ToServer.Handle(ctx, m)
				}
				switch k := m.Kind(); {
				case k == frame.Request && m.Method() == mcp.MethodInitialize:
					disc, _ := c.Discovery()
					if disc.Len() == 0 {
						why := "the server gave no server/discover result to answer initialize from"
						if r := c.EraReason(); r != "" {
							why += " (speaking 2026-07-28: " + r + ")"
						}
						log.Warn("initialize not answered: " + why)
						return next.ToClient.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeGateway, why))
					}
					answer := frame.ResultResponse(m.ID(), initializeFromDiscovery(m, disc))
					c.Initialized(m, answer)
					log.Debug("initialize answered from server/discover", "version", answer.Get("result.protocolVersion").String())
					return next.ToClient.Handle(ctx, answer)
				case k == frame.Request && m.Method() == mcp.MethodPing:
					return next.ToClient.Handle(ctx, frame.ResultResponse(m.ID(), []byte("{}")))
				case k == frame.Request && m.Method() == mcp.MethodSetLevel:
					if level := m.Get("params.level"); level.Type == gjson.String {
						c.SetLogLevel(level.Str)
					}
					return next.ToClient.Handle(ctx, frame.ResultResponse(m.ID(), []byte("{}")))
				case k == frame.Notification && (m.Method() == mcp.MethodInitialized || m.Method() == mcp.MethodRootsListChanged):
					log.Debug("not forwarded to a 2026-07-28 server", "method", m.Method())
					return nil
				}
				return next.ToServer.Handle(ctx, m)
			}),
			ToClient: next.ToClient,
		}
	}
}

// initializeFromDiscovery returns the result of the session-era
// initialize request init, answered from the 2026-07-28 server's
// DiscoverResult disc: the members the server gave, none it did not.
func initializeFromDiscovery(init, disc frame.Message) []byte {
	version := init.Get("params.protocolVersion").String()
	if !mcp.IsSessionEra(version) {
		version = mcp.LatestSessionEraVersion
	}
	entries := []metaEntry{{"protocolVersion", jsonString(version)}}
	if v := disc.Get("result.capabilities"); v.Exists() {
		entries = append(entries, metaEntry{"capabilities", []byte(v.Raw)})
	}
	if v := disc.Get(mcp.ResultServerInfo); v.Exists() {
		entries = append(entries, metaEntry{"serverInfo", []byte(v.Raw)})
	}
	if v := disc.Get("result.instructions"); v.Exists() {
		entries = append(entries, metaEntry{"instructions", []byte(v.Raw)})
	}
	return metaObject(entries)
}
