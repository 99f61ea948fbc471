package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/mcp-stdio/mcp-stdio/auth"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

const relayUsage = `usage: mcp-stdio [flags] URL

Relay a local stdio MCP client (Claude Desktop, Claude Code, an IDE) to the
remote MCP server at URL, over Streamable HTTP or the older HTTP+SSE
transport. stdin and stdout carry the client's JSON-RPC, one message per line;
logs go to stderr.

Other commands:
  mcp-stdio serve [flags] [-- CMD ARGS...]   publish a stdio server over HTTP

Flags:
`

// relayFlags are the relay's command-line settings. Names follow the
// Python mcp-stdio so this is a drop-in replacement.
type relayFlags struct {
	url            string
	bearer         string
	headers        headerList
	transport      string
	connectTimeout seconds
	readTimeout    seconds
	sseReadTimeout seconds
	noKeepalive    bool
	noCancelFilter bool
	check          bool
	test           bool
	version        bool
	maxMessage     int
	logLevel       slog.Level

	// OAuth 2.1 (see package auth).
	oauth          bool
	clientID       string
	clientSecret   string
	clientMetadata string
	oauthScope     string
	oauthDevice    bool
	oauthTimeout   seconds
	oauthEager     bool
	noOAuthReauth  bool
}

func newRelayFlagSet(f *relayFlags, getenv func(string) string) *flag.FlagSet {
	fs := flag.NewFlagSet("mcp-stdio", flag.ContinueOnError)
	f.bearer = getenv("MCP_BEARER_TOKEN")
	f.transport = pipeline.TransportAuto
	f.connectTimeout = seconds(transport.DefaultConnectTimeout.Seconds())
	f.readTimeout = seconds(transport.DefaultReadTimeout.Seconds())
	f.sseReadTimeout = seconds(pipeline.DefaultSSEIdle.Seconds())
	fs.StringVar(&f.bearer, "bearer-token", f.bearer, "static bearer `token` sent as Authorization (prefer the MCP_BEARER_TOKEN env var: flags show in ps)")
	fs.Var(&f.headers, "header", "extra HTTP header `'Name: Value'` on every request (repeatable)")
	fs.Var(&f.headers, "H", "shorthand for --header")
	fs.StringVar(&f.transport, "transport", f.transport, "`transport`: auto (Streamable HTTP, falling back to HTTP+SSE), streamable-http, or sse")
	fs.Var(&f.connectTimeout, "timeout-connect", "connect timeout in `seconds`; also the wait for the HTTP+SSE endpoint at start")
	fs.Var(&f.readTimeout, "timeout-read", "read timeout in `seconds`: for response headers and for silence inside a response")
	fs.Var(&f.sseReadTimeout, "sse-read-timeout", "idle `seconds` on a standing SSE stream before reconnecting (0 = never)")
	fs.BoolVar(&f.noKeepalive, "no-tcp-keepalive", false, "turn off TCP keepalive probes (on: 60s idle, 15s x 4)")
	fs.BoolVar(&f.noCancelFilter, "no-cancel-filter", false, "pass responses to cancelled requests through, and don't abort their HTTP requests")
	fs.BoolVar(&f.check, "check", false, "check connectivity: send initialize, print what the server says on stderr, exit 0 or 1")
	fs.BoolVar(&f.test, "test", false, "deprecated alias for --check")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.BoolVar(&f.version, "V", false, "shorthand for --version")
	fs.IntVar(&f.maxMessage, "max-message-size", 0, "largest message in `bytes` in either direction (0 = 64 MiB)")
	fs.TextVar(&f.logLevel, "log-level", slog.LevelInfo, "stderr log `level`: debug, info, warn or error")

	f.clientID = getenv("MCP_OAUTH_CLIENT_ID")
	f.clientSecret = getenv("MCP_OAUTH_CLIENT_SECRET")
	f.oauthTimeout = seconds(auth.DefaultTimeout.Seconds())
	fs.BoolVar(&f.oauth, "oauth", false, "sign in with OAuth 2.1 (browser, PKCE); tokens are kept in ~/.config/mcp-stdio/tokens.json")
	fs.StringVar(&f.clientID, "client-id", f.clientID, "pre-registered OAuth client `id` (env MCP_OAUTH_CLIENT_ID); default: registers one")
	fs.StringVar(&f.clientSecret, "client-secret", f.clientSecret, "OAuth client `secret` for --client-id (prefer the env var MCP_OAUTH_CLIENT_SECRET)")
	fs.StringVar(&f.clientMetadata, "client-metadata-url", "", "https `URL` of a Client ID Metadata Document, used as client_id where the server supports it")
	fs.StringVar(&f.oauthScope, "oauth-scope", "", "`scope` to request (default: the server's challenge, else its scopes_supported)")
	fs.BoolVar(&f.oauthDevice, "oauth-device", false, "sign in with the device grant (prints a code to enter elsewhere); implies --oauth")
	fs.Var(&f.oauthTimeout, "oauth-timeout", "`seconds` one sign-in may take")
	fs.BoolVar(&f.oauthEager, "oauth-eager", false, "sign in at start instead of at the first 401")
	fs.BoolVar(&f.noOAuthReauth, "no-oauth-reauth", false, "when the grant is revoked, fail requests instead of signing in again in the background")
	return fs
}

// Relay is the relay command (the default): mcp-stdio [flags] URL.
func Relay(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer, opt Options) error {
	var f relayFlags
	fs := newRelayFlagSet(&f, getenv)
	fs.SetOutput(stderr)
	usage := setUsage(fs, relayUsage)
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return parseError(err, fs, usage, stdout, stderr)
	}
	if f.version {
		fmt.Fprintf(stdout, "mcp-stdio %s\n", opt.Version)
		return nil
	}
	logger := newLogger(stderr, f.logLevel)
	if f.test {
		logger.Warn("--test is deprecated; use --check instead")
		f.check = true
	}
	cfg, err := f.config(positional, getenv, logger)
	cfg.HTTPClient = opt.HTTPClient
	if err != nil {
		fmt.Fprintf(stderr, "mcp-stdio: %v\nrun 'mcp-stdio --help' for usage\n", err)
		return &ExitError{Code: ExitUsage}
	}
	if f.oauth {
		oc, err := f.oauthClient(&cfg, getenv, stderr, logger)
		if err != nil {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("OAuth setup failed: %w", err)}
		}
		runCtx, stopOAuth := context.WithCancel(ctx)
		oauthDone := make(chan struct{})
		go func() {
			defer close(oauthDone)
			if err := oc.Run(runCtx); err != nil && runCtx.Err() == nil {
				logger.Warn("OAuth background work ended", "err", err)
			}
		}()
		defer func() { stopOAuth(); <-oauthDone }()
		if f.check {
			if err := oc.EnsureToken(ctx); err != nil {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("OAuth authentication failed: %w", err)}
			}
		}
	}
	if f.check {
		if _, err := pipeline.Check(ctx, cfg, stderr); err != nil {
			return &ExitError{Code: ExitFailure}
		}
		return nil
	}
	logger.Info("relaying stdio", "url", redactURL(cfg.URL), "transport", cfg.Transport, "oauth", f.oauth)
	if opt.OwnProcess {
		var restore func()
		stdin, restore = tuneStdioProcess(stdin, getenv, logger)
		defer restore()
	}
	if err := pipeline.Relay(ctx, cfg, stdin, stdout); err != nil {
		return err
	}
	return nil
}

// oauthClient builds the OAuth client for cfg's server and routes the
// relay's HTTP through it: every request carries the current token, and
// the re-authorisation stage is wired in.
func (f *relayFlags) oauthClient(cfg *pipeline.RelayConfig, getenv func(string) string, stderr io.Writer, logger *slog.Logger) (*auth.Client, error) {
	base := cfg.HTTPClient
	if base == nil {
		base = transport.NewHTTPClient(cfg.HTTP)
	}
	// Authorization-server traffic goes without the token, with a bound.
	asClient := &http.Client{Transport: base.Transport, Timeout: 30 * time.Second}
	oc, err := auth.New(auth.Options{
		ServerURL:         cfg.URL,
		ClientID:          f.clientID,
		ClientSecret:      f.clientSecret,
		ClientMetadataURL: f.clientMetadata,
		Scope:             f.oauthScope,
		Device:            f.oauthDevice,
		Timeout:           f.oauthTimeout.duration(),
		Eager:             f.oauthEager,
		NoReauth:          f.noOAuthReauth,
		HTTPClient:        asClient,
		Getenv:            getenv,
		Stderr:            stderr,
		Logger:            logger,
	})
	if err != nil {
		return nil, err
	}
	cfg.HTTPClient = &http.Client{
		Transport:     &auth.Transport{Base: base.Transport, Source: oc},
		CheckRedirect: base.CheckRedirect,
	}
	cfg.Auth = oc
	return oc, nil
}

// config checks the flags and turns them into a relay configuration.
func (f *relayFlags) config(positional []string, getenv func(string) string, logger *slog.Logger) (pipeline.RelayConfig, error) {
	var cfg pipeline.RelayConfig
	switch len(positional) {
	case 0:
		return cfg, errors.New("missing the server URL")
	case 1:
	default:
		return cfg, fmt.Errorf("one server URL expected, got %d arguments", len(positional))
	}
	u, err := url.Parse(positional[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cfg, fmt.Errorf("invalid server URL %q: want http(s)://host/path", positional[0])
	}
	switch f.transport {
	case pipeline.TransportAuto, pipeline.TransportStreamable, pipeline.TransportSSE:
	default:
		return cfg, fmt.Errorf("invalid --transport %q: want auto, streamable-http or sse", f.transport)
	}
	if f.maxMessage < 0 {
		return cfg, errors.New("--max-message-size must not be negative")
	}
	if f.oauthDevice {
		f.oauth = true
	}
	if f.oauth && f.bearer != "" {
		return cfg, errors.New("--oauth and --bearer-token (or MCP_BEARER_TOKEN) are mutually exclusive")
	}
	if !f.oauth && (f.clientMetadata != "" || f.oauthScope != "" || f.oauthEager || f.noOAuthReauth) {
		return cfg, errors.New("--client-metadata-url, --oauth-scope, --oauth-eager and --no-oauth-reauth need --oauth")
	}
	// Header precedence: defaults (set by the transport), then the bearer
	// token, then -H entries in order.
	h := http.Header{}
	if f.bearer != "" {
		h.Set("Authorization", "Bearer "+f.bearer)
	}
	for _, kv := range f.headers {
		h.Set(kv[0], kv[1])
	}
	cfg = pipeline.RelayConfig{
		URL:       u.String(),
		Transport: f.transport,
		Header:    h,
		HTTP: transport.HTTPOptions{
			ConnectTimeout: f.connectTimeout.duration(),
			ReadTimeout:    f.readTimeout.duration(),
			KeepAlive:      !f.noKeepalive,
			Getenv:         getenv,
		},
		SSEReadTimeout: f.sseReadTimeout.durationOrOff(),
		MaxMessageSize: f.maxMessage,
		NoCancelFilter: f.noCancelFilter,
		Advice:         f.advice,
		Logger:         logger,
	}
	return cfg, nil
}

// parseInterspersed parses flags wherever they appear among the positional
// arguments (as Python's argparse does: `mcp-stdio URL --transport sse`
// works), and returns the positional ones. "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// flag stops at the first non-flag, or after "--".
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// headerList collects -H values, validated as they are parsed.
type headerList [][2]string

func (h *headerList) String() string { return "" }

func (h *headerList) Set(s string) error {
	name, value, err := transport.ParseHeader(s)
	if err != nil {
		return err
	}
	*h = append(*h, [2]string{http.CanonicalHeaderKey(name), value})
	return nil
}

// redactURL drops credentials and the query (which may carry tokens) from a
// URL for logging.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(invalid URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.String()
}
