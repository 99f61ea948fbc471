// Package auth is the OAuth 2.1 client of the relay: it finds a remote MCP
// server's authorization server, gets the user signed in, keeps the token
// fresh, and shares tokens between relay processes through a file store.
// (The static-bearer gate of serve lives here too, in bearer.go.) This is
// the client half of MCP authorization; the server half, serve as an OAuth
// protected resource, is package auth/server.
//
// # The seam with the relay
//
// Three pieces, all driven by one [Client] per remote server:
//
//   - [Transport] wraps the relay's http.RoundTripper and puts
//     "Authorization: Bearer <token>" on every request (POST, the GET
//     stream, DELETE), replacing any static Authorization header. On a 401
//     or 403 it notes in the response which token the request carried.
//   - The relay's reauth stage (mw.Reauth, which knows the Client only as
//     its small Authorizer interface) calls [Client.Unauthorized] for a 401
//     and [Client.Forbidden] for a 403 on any message, and sends the
//     message once more, answers -32002, or fails it, as they decide.
//   - [Client.Run] runs for the relay's lifetime: it refreshes the token
//     before it expires and is the home of background sign-ins.
//
// # Discovery
//
// A sign-in starts from the 401's WWW-Authenticate challenge when there is
// one, of whatever scheme (typescript-sdk#1946): its resource_metadata URL
// is tried first, then the path-aware well-known URL of RFC 9728 with the
// server's query kept (https://h/mcp?tenant=t1 →
// https://h/.well-known/oauth-protected-resource/mcp?tenant=t1), then the
// host root. The document's resource must be the server or a parent path of
// it, or discovery fails: MCP 2026-07-28 requires rejecting a mismatch, and
// a client that followed a foreign resource would hand its user's consent
// to another server. The first listed authorization server that is https
// (plain http only on loopback: localhost, localhost., 127/8, every
// spelling of ::1) is used. Its metadata is looked for with RFC 8414 path
// insertion, then OpenID configuration, in the order of MCP 2026-07-28; a
// document naming another issuer is an error, never a reason to try
// elsewhere. Only when no metadata exists at all (every URL 404s) do the
// MCP 2025-03-26 defaults /authorize, /token and /register on the
// authorization server (or on the MCP server's origin, when there is no
// resource metadata either) apply. Statuses other than 200 and bodies that
// are not JSON (an HTML page from a single-page app) move on to the next
// URL; JSON of the wrong shape is an error with a message saying what is
// wrong. An unreachable server is an error at once.
//
// # Who the client is
//
// In order: a pre-registered client (Options.ClientID and ClientSecret,
// authenticating at the token endpoint with client_secret_basic,
// client_secret_post or none as the server advertises); a Client ID
// Metadata Document URL when the server advertises support and
// Options.ClientMetadataURL is set; the client this process or a sibling
// registered earlier with the same issuer, while its secret lasts
// (client_secret_expires_at, 0 = never); else dynamic client registration
// (RFC 7591) at the advertised registration_endpoint, never a guessed one,
// as client_name "mcp-stdio" with application_type "native". A
// registration asks for token_endpoint_auth_method "none" unless the
// server takes no public clients, in which case it asks for what the server
// lists. Registrations are stored with their issuer and never used with
// another.
//
// # Sign-in
//
// The authorization code grant with PKCE S256 through the user's browser:
// a loopback listener on 127.0.0.1 and a fresh ephemeral port per flow
// (or Options.CallbackPort; taken, the error names the process holding it
// where the platform tells) serves exactly /callback; state is 32 random bytes compared in constant
// time; a present iss must equal the recorded issuer exactly (RFC 9207) and
// a missing one is refused when the server advertised
// authorization_response_iss_parameter_supported; resource (RFC 8707) goes
// on the authorization, token and refresh requests unless
// Options.NoResource leaves it out (Entra ID refuses it: AADSTS9010010);
// Options.AuthParams add parameters to the authorization request (never
// one the flow sets itself, see [ReservedAuthParam]); scope is
// Options.Scope, else the challenge's, else the resource metadata's
// scopes_supported, else omitted, plus offline_access when the
// authorization server lists it; prompt is never sent. The URL is always
// printed on Options.Stderr and opened with $BROWSER (a command, run with
// the URL as its last argument or in place of %s; tests point it at a
// helper that follows the redirect) or the platform's opener. With
// Options.Device the device grant (RFC 8628) runs instead: the
// verification URI and user code are printed and the token endpoint is
// polled at the server's interval, 5 s slower after each slow_down.
// Options.Timeout (default 120 s) bounds a flow. The PKCE verifier lives in
// memory only.
//
// # Keeping the session alive
//
// Run refreshes at 80% of a token's lifetime or 60 s before it expires,
// whichever comes first. A 401 (see [Client.Unauthorized] for the exact
// rules) is first checked for staleness (the request carried a token that
// has since been replaced: just send it again), then the store is checked
// for a sibling's newer token (adopted without spending anything), then the
// refresh token is spent. A dead grant — the refresh token refused, or a
// freshly refreshed token refused again — starts a sign-in in the
// background and the request gets -32002 at once; one sign-in runs at a
// time, and a failed one pauses automatic sign-ins for a minute. The very
// first sign-in of a process (no grant anywhere) runs in the foreground of
// the request that met the 401 instead. A 403 with insufficient_scope signs
// in again with the union of held and demanded scopes, a bounded number of
// times per scope set.
//
// # Token store
//
// ~/.config/mcp-stdio/tokens.json ($XDG_CONFIG_HOME honoured), directory
// 0700, file 0600, one entry per server under its canonical URI
// ([CanonicalResource]), in the member names of mcp-stdio 0.8.0 so its
// stores still load. Writes are atomic; read-modify-write runs under a
// flock on tokens.json.lock, and refreshes run inside that transaction, so
// two relays never spend the same rotating refresh token: the second one
// re-reads the store and adopts what the first got. A dead grant is
// deleted only while the store still holds the refresh token that failed;
// the registration stays. Interactive sign-ins take a second, per-server
// lock so that sibling relays do not open a browser each. A corrupt store
// is reported and moved aside before the next write, never silently lost.
// On platforms without flock the locks are no-ops (see lock_other.go).
//
// # Tokens from a command
//
// [CommandSource] is the other way to a bearer token: a command that
// prints it (gcloud auth print-access-token), run at start and at most
// once per 401 on the current token, bounded by a timeout.
//
// # Credentials
//
// Tokens, codes, verifiers and secrets never appear in log lines, error
// messages or command lines; token endpoint errors carry the OAuth error
// code and a cleaned error_description (with anything we sent redacted),
// never a response body. The only thing printed for the user is the
// authorization URL (or the device code), which carries state and the PKCE
// challenge but no credential.
//
// # golang.org/x/oauth2
//
// It supplies what it does exactly right and what would be a second copy
// otherwise: the PKCE verifier and S256 challenge, the authorization URL,
// and the device authorization request. The token endpoint is spoken here
// (requestToken): x/oauth2's refresh cannot send the resource parameter MCP
// requires, it dates expiry by the wall clock instead of an injectable
// [Clock], and its errors print raw response bodies. Parsing token
// responses here also gives them a fuzz target ([ParseTokenResponse]).
package auth
