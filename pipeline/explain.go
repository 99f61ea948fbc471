package pipeline

import (
	"context"
	"net/http"

	"github.com/mcp-stdio/mcp-stdio/auth"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// Unreachable explains why the server cannot be used at all; see
// [mw.Unreachable], where the diagnosis lives. [Check] reports it, and
// the relay answers a failed initialize with it — and every request with
// it once the HTTP+SSE stream could not be opened.
type Unreachable = mw.Unreachable

// OAuthMetadataWait bounds the look for a server's OAuth metadata after
// it refused the relay with 401 or 403 (see Unreachable.OAuthMetadata).
const OAuthMetadataWait = mw.OAuthMetadataWait

// explain turns a failure to reach the server into an [Unreachable] (see
// mw.Diagnose), with the advice of c.Advice; nil for failures that say
// nothing about the server.
func (c *RelayConfig) explain(err error) *Unreachable {
	return mw.Diagnose(err, mw.DiagnoseOptions{
		URL:               c.URL,
		Transport:         c.Transport,
		Header:            c.Header,
		SignsIn:           c.Auth != nil,
		FindOAuthMetadata: c.findOAuthMetadata,
		Lookup:            c.lookup,
		Advice:            c.Advice,
		Logger:            c.Logger,
	})
}

// findOAuthMetadata looks for the OAuth metadata the server publishes as
// a sign-in does, with the relay's HTTP client, without credentials.
func (c *RelayConfig) findOAuthMetadata(ctx context.Context, challenge http.Header) (string, error) {
	hc := c.HTTPClient
	if hc == nil {
		hc = transport.NewHTTPClient(c.HTTP)
		defer hc.CloseIdleConnections()
	}
	return auth.FindOAuthMetadata(ctx, hc, c.URL, challenge)
}
