package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-stdio/mcp-stdio/auth"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

const relayUsage = `usage: mcp-stdio [flags] URL
       mcp-stdio serve [flags] [-- CMD ARGS...]   (see: mcp-stdio help serve)

Relay a local stdio MCP client (Claude Desktop, Claude Code, an IDE) to the
remote MCP server at URL, over Streamable HTTP or the older HTTP+SSE
transport. stdin and stdout carry the client's JSON-RPC, one message per line;
logs go to stderr.

DURATION is seconds (30) or a Go duration (30s, 5m); BYTES is a number of
bytes, or one with KiB, MiB or GiB (64MiB).

Flags:
`

// relayHelpFooter follows the flags in the relay's help.
// relayQuietRelease is how long the relay's stdout stays quiet, after its
// first answers, before the relay gives back its start-up pages (see
// releaseWhenQuiet): a host's start-up exchanges come in one burst.
const relayQuietRelease = 3 * time.Second

const relayHelpFooter = `
Also accepted, for users of other gateways (see the README):
  --transport http-first, sse-first (auto), http-only, streamablehttp
      (streamable-http), sse-only (sse)
  --debug (--log-level debug), --silent (--log-level error),
  --auth-timeout SECONDS (--oauth-timeout), --oauth2Bearer TOKEN
  (--bearer-token), --enable-proxy (proxies are always honoured)
  URL PORT: the callback port after the URL (--oauth-callback-port PORT)
  --ignore-tool GLOB (--deny-tool GLOB)
  ${NAME} in a header value is taken from the environment
  --disable-resource-parameter (--no-oauth-resource)
  --test (deprecated: --check)
`

// relayHelp is how the relay's help lists its flags.
var relayHelp = helpLayout{
	order: []string{"bearer-token", "bearer-token-command", "header", "transport", "era", "check", "timeout-connect", "timeout-read",
		"sse-read-timeout", "no-tcp-keepalive", "no-cancel-filter", "no-cache", "allow-tool", "deny-tool", "mcp-param-headers", "max-message-size", "max-depth", "max-buffered", "allow-http", "follow-redirects", "ca-file", "log-level", "log-format",
		"oauth", "client-id", "client-secret", "client-metadata-url", "oauth-scope", "oauth-device",
		"oauth-callback-port", "oauth-timeout", "oauth-eager", "no-oauth-reauth", "oauth-param", "no-oauth-resource", "version"},
	short:  map[string]string{"header": "H", "version": "V"},
	hidden: []string{"test", "debug", "silent", "auth-timeout", "oauth2Bearer", "enable-proxy", "disable-resource-parameter", "ignore-tool"},
	defaults: map[string]string{
		"max-buffered":  "256MiB, or twice --max-message-size when that is more",
		"bearer-token":  "$MCP_BEARER_TOKEN",
		"client-id":     "$MCP_OAUTH_CLIENT_ID",
		"client-secret": "$MCP_OAUTH_CLIENT_SECRET",
	},
}

// relayFlags are the relay's command-line settings. Names follow the
// Python mcp-stdio so this is a drop-in replacement.
type relayFlags struct {
	url            string
	tools          toolFilterFlags
	bearer         string
	bearerCommand  string
	headers        headerList
	transport      string
	era            string
	connectTimeout duration
	readTimeout    duration
	sseReadTimeout duration
	noKeepalive    bool
	noCancelFilter bool
	noCache        bool
	paramHeaders   string
	check          bool
	test           bool
	version        bool
	maxMessage     byteSize
	maxDepth       int
	maxBuffered    byteSize
	bufferedSet    bool // --max-buffered was given
	logLevel       logLevel
	logFormat      logFormat
	allowHTTP      bool
	followRedirect bool
	caFiles        stringList
	bearerArgv     []string // --bearer-token-command, split

	// Other gateways' names (see relayHelpFooter).
	debug       bool
	silent      bool
	enableProxy bool

	// OAuth 2.1 (see package auth).
	oauth          bool
	clientID       string
	clientSecret   string
	clientMetadata string
	oauthScope     string
	oauthDevice    bool
	oauthTimeout   duration
	callbackPort   int
	oauthEager     bool
	noOAuthReauth  bool
	oauthParams    paramList
	noResource     bool
}

// newRelayFlagSet defines the relay's flags on a new flag set. Defaults
// that come from the environment are applied after parsing (see
// relayFlags.fromEnv), so that the help never shows a secret.
func newRelayFlagSet(f *relayFlags) *flag.FlagSet {
	fs := newFlagSet("mcp-stdio")
	f.transport = pipeline.TransportAuto
	f.connectTimeout = duration(transport.DefaultConnectTimeout)
	f.readTimeout = duration(transport.DefaultReadTimeout)
	f.sseReadTimeout = duration(pipeline.DefaultSSEIdle)
	f.maxMessage = frame.DefaultMaxMessageSize
	f.logLevel = logLevel(slog.LevelInfo)
	fs.StringVar(&f.bearer, "bearer-token", "", "send `TOKEN` as Authorization: Bearer (prefer the MCP_BEARER_TOKEN env var: flags show in ps)")
	fs.StringVar(&f.bearerCommand, "bearer-token-command", "", "run `CMD` (split into arguments as a shell would, but nothing expanded; for a shell write sh -c '…') for the bearer token it prints, at start and again after a 401; it must finish within 30s")
	fs.Var(&f.headers, "header", "add the header `'Name: Value'` to every request (repeatable)")
	fs.Var(&f.headers, "H", "shorthand for --header")
	fs.StringVar(&f.transport, "transport", f.transport, "speak `TRANSPORT`: auto (Streamable HTTP, falling back to HTTP+SSE), streamable-http or sse")
	f.era = string(mw.EraAuto)
	fs.StringVar(&f.era, "era", f.era, "speak the protocol era `ERA` to the server: auto (the host's own era when the server speaks it, a bridge only when it does not), modern (MCP 2026-07-28 whatever the host speaks: no session, every request on its own, for a stateless server behind a round-robin balancer) or session (no probe: the session era over Streamable HTTP, falling back to HTTP+SSE)")
	fs.Var(&f.connectTimeout, "timeout-connect", "wait at most `DURATION` to connect, and at start for the HTTP+SSE endpoint event")
	fs.Var(&f.readTimeout, "timeout-read", "wait at most `DURATION` for response headers, and for the next byte inside a response")
	fs.Var(&f.sseReadTimeout, "sse-read-timeout", "reconnect a standing SSE stream that stays silent for `DURATION` (0 = never)")
	fs.BoolVar(&f.noKeepalive, "no-tcp-keepalive", false, "turn off TCP keepalive probes (on: 60s idle, 15s x 4)")
	fs.BoolVar(&f.noCancelFilter, "no-cancel-filter", false, "pass responses to cancelled requests through, and don't abort their HTTP requests")
	f.tools.register(fs)
	fs.BoolVar(&f.noCache, "no-cache", false, "send every list and read to the server, even while the ttlMs of its last answer lasts")
	fs.StringVar(&f.paramHeaders, "mcp-param-headers", mw.ParamHeadersModern.String(), "mirror tool arguments annotated x-mcp-header into Mcp-Param-* headers, per `MODE`: modern (on 2026-07-28 servers), always (on session-era servers too) or off")
	fs.BoolVar(&f.check, "check", false, "check connectivity: send initialize, print what the server says (or why it cannot be used) on stderr, exit 0 or 1")
	fs.BoolVar(&f.test, "test", false, "deprecated alias for --check")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.BoolVar(&f.version, "V", false, "shorthand for --version")
	fs.Var(&f.maxMessage, "max-message-size", "refuse messages larger than `BYTES`, in either direction")
	fs.IntVar(&f.maxDepth, "max-depth", frame.DefaultMaxDepth, "refuse messages whose JSON nests deeper than `N` levels, in either direction")
	fs.Var(&f.maxBuffered, "max-buffered", "hold at most `BYTES` of the server's messages at once, all requests together; a message beyond fails its request with an error (a message counts up to twice its size: at least twice --max-message-size)")
	fs.Var(&f.caFiles, "ca-file", "trust the CA certificates in the PEM file `PEM` too, besides the system's, for the server and its OAuth requests (a corporate TLS-inspecting proxy, a private CA); repeatable")
	fs.Var(&f.logLevel, "log-level", "log at `LEVEL` on stderr: debug, info, warn or error")
	fs.Var(&f.logFormat, "log-format", "write logs on stderr as `FORMAT`: text (key=value lines) or json (one object per line, a record per request at info)")
	fs.BoolVar(&f.allowHTTP, "allow-http", false, "send credentials over plain http to a host beyond loopback without a warning")
	fs.BoolVar(&f.followRedirect, "follow-redirects", false, "follow the server's redirects (307, 308) to another origin, and use an HTTP+SSE endpoint there, sending no Authorization, Cookie, -H header or OAuth token there (never from https to http)")
	fs.BoolVar(&f.debug, "debug", false, "mcp-remote's name for --log-level debug")
	fs.BoolVar(&f.silent, "silent", false, "mcp-remote's name for --log-level error")
	fs.BoolVar(&f.enableProxy, "enable-proxy", false, "mcp-remote's flag to honour HTTP(S)_PROXY, which is always done")
	fs.StringVar(&f.bearer, "oauth2Bearer", "", "supergateway's name for --bearer-token")

	f.oauthTimeout = duration(auth.DefaultTimeout)
	fs.BoolVar(&f.oauth, "oauth", false, "sign in with OAuth 2.1 (browser, PKCE); tokens are kept in ~/.config/mcp-stdio/tokens.json")
	fs.StringVar(&f.clientID, "client-id", "", "pre-registered OAuth client `ID`; without it, one is registered")
	fs.StringVar(&f.clientSecret, "client-secret", "", "OAuth client `SECRET` for --client-id (prefer the env var MCP_OAUTH_CLIENT_SECRET)")
	fs.StringVar(&f.clientMetadata, "client-metadata-url", "", "https `URL` of a Client ID Metadata Document, used as client_id where the server supports it")
	fs.StringVar(&f.oauthScope, "oauth-scope", "", "`SCOPE` to request (default: the server's challenge, else its scopes_supported)")
	fs.BoolVar(&f.oauthDevice, "oauth-device", false, "sign in with the device grant (prints a code to enter elsewhere); implies --oauth")
	fs.Var(&f.oauthTimeout, "oauth-timeout", "give one sign-in at most `DURATION`")
	fs.Var(&f.oauthTimeout, "auth-timeout", "mcp-remote's name for --oauth-timeout")
	fs.IntVar(&f.callbackPort, "oauth-callback-port", 0, "take the browser sign-in's redirect on loopback `PORT` (redirect URI http://127.0.0.1:PORT/callback), for servers that want it registered beforehand; implies --oauth (default: a fresh port each time)")
	fs.BoolVar(&f.oauthEager, "oauth-eager", false, "sign in at start instead of at the first 401")
	fs.BoolVar(&f.noOAuthReauth, "no-oauth-reauth", false, "when the grant is revoked, fail requests instead of signing in again in the background")
	fs.Var(&f.oauthParams, "oauth-param", "add `NAME=VALUE` to the sign-in's authorization request, for identity providers that want more (access_type=offline, audience=…, prompt=consent); repeatable, not the parameters OAuth sets itself")
	fs.BoolVar(&f.noResource, "disable-resource-parameter", false, "mcp-remote's name for --no-oauth-resource")
	fs.BoolVar(&f.noResource, "no-oauth-resource", false, "leave RFC 8707's resource out of the authorization and token requests, for identity providers that refuse it (Microsoft Entra ID: AADSTS9010010)")
	return fs
}

// fromEnv applies the defaults that come from the environment to the
// flags not given.
func (f *relayFlags) fromEnv(fs *flag.FlagSet, getenv func(string) string) {
	for _, d := range []struct {
		flag, env string
		v         *string
	}{
		{"bearer-token", "MCP_BEARER_TOKEN", &f.bearer},
		{"client-id", "MCP_OAUTH_CLIENT_ID", &f.clientID},
		{"client-secret", "MCP_OAUTH_CLIENT_SECRET", &f.clientSecret},
	} {
		if !flagSet(fs, d.flag) && *d.v == "" {
			*d.v = getenv(d.env)
		}
	}
}

// Relay is the relay command (the default): mcp-stdio [flags] URL.
func Relay(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer, opt Options) error {
	var f relayFlags
	fs := newRelayFlagSet(&f)
	usage := relayUsagePrinter(fs)
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return parseError(err, "mcp-stdio", usage, stdout, stderr)
	}
	f.fromEnv(fs, getenv)
	f.bufferedSet = flagSet(fs, "max-buffered")
	if f.version {
		fmt.Fprintf(stdout, "mcp-stdio %s\n", opt.Version)
		return nil
	}
	switch {
	case f.debug:
		f.logLevel = logLevel(slog.LevelDebug)
	case f.silent:
		f.logLevel = logLevel(slog.LevelError)
	}
	logger := newLogger(stderr, f.logLevel.level(), f.logFormat)
	if f.test {
		logger.Warn("--test is deprecated; use --check instead")
		f.check = true
	}
	cfg, err := f.config(positional, getenv, logger)
	cfg.HTTPClient = opt.HTTPClient
	cfg.Version = opt.Version
	cfg.AccessLogInfo = f.logFormat == logJSON
	if err != nil {
		fmt.Fprintf(stderr, "mcp-stdio: %v (run 'mcp-stdio --help' for the flags)\n", err)
		return &ExitError{Code: ExitUsage}
	}
	spans, sampler := otelFromEnv(getenv, opt.Version, "mcp-stdio relay", logger)
	if spans != nil {
		cfg.Spans, cfg.Sampler = spans, sampler
		defer shutdownSpans(ctx, spans, transport.DefaultOTLPTimeout, logger)
	}
	f.warnPlainHTTP(cfg.URL, logger)
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
	if f.bearerArgv != nil {
		if err := f.commandToken(ctx, &cfg); err != nil {
			fmt.Fprintf(stderr, "mcp-stdio: %v\n", err)
			return &ExitError{Code: ExitFailure}
		}
	}
	if f.check {
		if _, err := pipeline.Check(ctx, cfg, stderr); err != nil {
			return &ExitError{Code: ExitFailure}
		}
		return nil
	}
	logger.Info("relaying stdio", "url", frame.DisplayURLString(cfg.URL), "transport", cfg.Transport, "era", string(cfg.Era), "oauth", f.oauth)
	if opt.OwnProcess {
		// SIGHUP (the terminal closed) ends the relay as SIGTERM does: it
		// finishes what is in flight.
		var stopHangup func()
		ctx, stopHangup = endOnHangup(ctx)
		defer stopHangup()
		var restore func()
		stdin, restore = tuneStdioProcess(stdin, getenv, logger)
		defer restore()
		var stdoutGone context.CancelCauseFunc
		ctx, stdoutGone = context.WithCancelCause(ctx)
		defer stdoutGone(nil)
		var restoreOut func()
		stdout, restoreOut = directStdout(stdout, stdoutGone)
		defer restoreOut()
		softMemoryLimit(int64(f.maxBuffered), getenv, logger)
		// Once the host's first exchanges are answered and it has gone
		// quiet, the pages only starting used leave the resident set.
		quietCtx, stopWatching := context.WithCancel(ctx)
		defer stopWatching()
		stdout = releaseWhenQuiet(quietCtx, stdout, relayQuietRelease, logger)
	}
	if err := pipeline.Relay(ctx, cfg, stdin, stdout); err != nil {
		return err
	}
	if cause := context.Cause(ctx); errors.Is(cause, errHostStoppedReading) {
		return &ExitError{Code: ExitFailure, Err: cause}
	}
	return nil
}

// relayUsagePrinter returns the function that prints the relay's help.
func relayUsagePrinter(fs *flag.FlagSet) func(io.Writer) {
	flags := usagePrinter(fs, relayUsage, relayHelp)
	return func(w io.Writer) {
		flags(w)
		fmt.Fprint(w, relayHelpFooter)
	}
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
		Timeout:           f.oauthTimeout.std(),
		CallbackPort:      f.callbackPort,
		Eager:             f.oauthEager,
		NoReauth:          f.noOAuthReauth,
		AuthParams:        f.oauthParams.values(),
		NoResource:        f.noResource,
		HTTPClient:        asClient,
		Getenv:            getenv,
		Stderr:            stderr,
		Logger:            logger,
		Advice:            func(err error) string { return certificateAdvice(err, len(f.caFiles) > 0) },
	})
	if err != nil {
		return nil, err
	}
	cfg.HTTPClient = &http.Client{
		Transport:     &auth.Transport{Base: base.Transport, Source: oc, Origin: cfg.URL},
		CheckRedirect: base.CheckRedirect,
	}
	cfg.Auth = oc
	return oc, nil
}

// commandToken runs --bearer-token-command for the first token and routes
// the relay's HTTP through it: every request carries the current token,
// and a 401 runs the command again (see auth.CommandSource).
func (f *relayFlags) commandToken(ctx context.Context, cfg *pipeline.RelayConfig) error {
	base := cfg.HTTPClient
	if base == nil {
		base = transport.NewHTTPClient(cfg.HTTP)
	}
	src, err := auth.NewCommandSource(auth.CommandOptions{Argv: f.bearerArgv, Name: "--bearer-token-command"})
	if err != nil {
		return err
	}
	if err := src.Fetch(ctx); err != nil {
		return err
	}
	cfg.HTTPClient = &http.Client{
		Transport:     &auth.Transport{Base: base.Transport, Source: src, Origin: cfg.URL},
		CheckRedirect: base.CheckRedirect,
	}
	cfg.Auth = src
	return nil
}

// config checks the flags and turns them into a relay configuration.
func (f *relayFlags) config(positional []string, getenv func(string) string, logger *slog.Logger) (pipeline.RelayConfig, error) {
	var cfg pipeline.RelayConfig
	switch len(positional) {
	case 0:
		return cfg, errors.New("missing the server URL, as in: mcp-stdio https://example.com/mcp")
	case 1:
	case 2:
		// mcp-remote's form: URL PORT, the OAuth callback port.
		port, err := callbackPort(positional[1])
		if err != nil {
			return cfg, fmt.Errorf("one server URL expected, got %q after it (a port after the URL is the OAuth callback port: %v)", positional[1], err)
		}
		if f.callbackPort != 0 && f.callbackPort != port {
			return cfg, fmt.Errorf("the callback port after the URL (%d) differs from --oauth-callback-port (%d)", port, f.callbackPort)
		}
		f.callbackPort = port
	default:
		return cfg, fmt.Errorf("one server URL expected, got %d arguments", len(positional))
	}
	u, err := url.Parse(positional[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cfg, fmt.Errorf("invalid server URL %q: want http(s)://host/path", positional[0])
	}
	if t, ok := transportAliases[f.transport]; ok {
		f.transport = t
	}
	switch f.transport {
	case pipeline.TransportAuto, pipeline.TransportStreamable, pipeline.TransportSSE:
	default:
		return cfg, fmt.Errorf("invalid --transport %q: want auto, streamable-http or sse", f.transport)
	}
	era, err := mw.ParseEraChoice(f.era)
	if err != nil {
		return cfg, fmt.Errorf("invalid --era %q: want auto, modern or session", f.era)
	}
	if era == mw.EraModern && f.transport == pipeline.TransportSSE {
		return cfg, errors.New("--era modern needs Streamable HTTP: it cannot go with --transport sse")
	}
	paramHeaders, err := mw.ParseParamHeaderMode(f.paramHeaders)
	if err != nil {
		return cfg, fmt.Errorf("invalid --mcp-param-headers %q: want modern, always or off", f.paramHeaders)
	}
	if f.callbackPort < 0 || f.callbackPort > 65535 {
		return cfg, fmt.Errorf("invalid --oauth-callback-port %d: want a port, 1 to 65535", f.callbackPort)
	}
	if f.callbackPort != 0 {
		f.oauth = true
	}
	if f.maxMessage <= 0 || f.maxMessage > math.MaxInt32 {
		return cfg, errors.New("--max-message-size must be positive and under 2GiB")
	}
	if f.maxDepth <= 0 {
		return cfg, errors.New("--max-depth must be positive")
	}
	if !f.bufferedSet {
		f.maxBuffered = byteSize(max(pipeline.DefaultMaxBuffered, 2*int64(f.maxMessage)))
	}
	if f.maxBuffered < 2*f.maxMessage {
		return cfg, fmt.Errorf("--max-buffered (%s) must be at least twice --max-message-size (%s): a message counts as the buffer holding it grows, up to twice its size", &f.maxBuffered, &f.maxMessage)
	}
	if f.oauthDevice {
		f.oauth = true
	}
	if f.oauth && f.bearer != "" {
		return cfg, errors.New("--oauth and --bearer-token (or MCP_BEARER_TOKEN) are mutually exclusive")
	}
	if f.bearerCommand != "" {
		switch {
		case f.oauth:
			return cfg, errors.New("--bearer-token-command and --oauth are mutually exclusive: the token comes from one or the other")
		case f.bearer != "":
			return cfg, errors.New("--bearer-token-command and --bearer-token (or MCP_BEARER_TOKEN) are mutually exclusive: unset MCP_BEARER_TOKEN, or leave out one of the flags")
		}
		for _, kv := range f.headers {
			if kv[0] == "Authorization" {
				return cfg, errors.New("--bearer-token-command and -H 'Authorization: …' are mutually exclusive: the command's token is sent as Authorization")
			}
		}
		argv, err := splitCommand(f.bearerCommand)
		if err != nil {
			return cfg, fmt.Errorf("--bearer-token-command: %v", err)
		}
		f.bearerArgv = argv
	}
	if !f.oauth && (f.clientMetadata != "" || f.oauthScope != "" || f.oauthEager || f.noOAuthReauth || len(f.oauthParams) > 0 || f.noResource) {
		return cfg, errors.New("--client-metadata-url, --oauth-scope, --oauth-eager, --no-oauth-reauth, --oauth-param and --no-oauth-resource need --oauth")
	}
	// Header precedence: defaults (set by the transport), then the bearer
	// token, then -H entries in order.
	h := http.Header{}
	if f.bearer != "" {
		h.Set("Authorization", "Bearer "+f.bearer)
	}
	for _, kv := range f.headers {
		v, err := expandEnv(kv[1], getenv)
		if err != nil {
			return cfg, fmt.Errorf("header %s: %w", kv[0], err)
		}
		h.Set(kv[0], v)
	}
	if err := f.tools.check(); err != nil {
		return cfg, err
	}
	tlsConfig, err := caTLSConfig(f.caFiles)
	if err != nil {
		return cfg, err
	}
	cfg = pipeline.RelayConfig{
		AllowTools: f.tools.allow,
		DenyTools:  f.tools.deny,
		URL:        u.String(),
		Transport:  f.transport,
		Era:        era,
		Header:     h,
		HTTP: transport.HTTPOptions{
			ConnectTimeout:  f.connectTimeout.std(),
			ReadTimeout:     f.readTimeout.std(),
			KeepAlive:       !f.noKeepalive,
			Getenv:          getenv,
			TLSClientConfig: tlsConfig,
		},
		SSEReadTimeout:  f.sseReadTimeout.orOff(),
		MaxMessageSize:  int(f.maxMessage),
		MaxDepth:        f.maxDepth,
		MaxBuffered:     int64(f.maxBuffered),
		NoCancelFilter:  f.noCancelFilter,
		NoCache:         f.noCache,
		ParamHeaders:    paramHeaders,
		FollowRedirects: f.followRedirect,
		Advice:          f.advice,
		Remedy:          f.remedy,
		Logger:          logger,
	}
	return cfg, nil
}

// transportAliases maps other gateways' transport names to ours:
// mcp-remote's strategies (its sse-first tries HTTP+SSE first; auto tries
// Streamable HTTP first, and lands on the same transport) and mcp-proxy's
// streamablehttp.
var transportAliases = map[string]string{
	"http-first":     pipeline.TransportAuto,
	"sse-first":      pipeline.TransportAuto,
	"http-only":      pipeline.TransportStreamable,
	"sse-only":       pipeline.TransportSSE,
	"streamablehttp": pipeline.TransportStreamable,
}

// callbackPort parses mcp-remote's positional callback port.
func callbackPort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, errors.New("want 1 to 65535")
	}
	return n, nil
}

// envReference is ${NAME} in a header value.
var envReference = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces each ${NAME} in a header value with the environment
// variable's value, as mcp-remote does (so that a host's config can keep
// a token in env and out of args). A variable that is not set is an
// error, not an empty value.
func expandEnv(v string, getenv func(string) string) (string, error) {
	var missing string
	v = envReference.ReplaceAllStringFunc(v, func(ref string) string {
		name := envReference.FindStringSubmatch(ref)[1]
		val := getenv(name)
		if val == "" && missing == "" {
			missing = name
		}
		return val
	})
	if missing != "" {
		return "", fmt.Errorf("${%s} is not set in the environment", missing)
	}
	if _, _, err := transport.ParseHeader("X:" + v); err != nil {
		return "", err
	}
	return v, nil
}

// warnPlainHTTP warns when credentials would cross the network in clear:
// a bearer token or an OAuth token sent over http:// to a host that is
// not loopback. --allow-http silences it.
func (f *relayFlags) warnPlainHTTP(rawURL string, logger *slog.Logger) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || f.allowHTTP || loopbackHost(u.Hostname()) {
		return
	}
	credentials := f.oauth || f.bearer != "" || f.bearerCommand != ""
	for _, kv := range f.headers {
		credentials = credentials || kv[0] == "Authorization"
	}
	if credentials {
		logger.Warn("sending credentials over plain http to " + u.Host + ": anyone on the network path can read the token and use it; use https, or pass --allow-http if this network is trusted")
	}
}

// loopbackHost reports whether a URL's host name is this machine.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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

// paramList collects --oauth-param NAME=VALUE values, checked as they
// are parsed: a name the sign-in sets itself, or one given twice, is
// refused.
type paramList [][2]string

func (p *paramList) String() string { return "" }

func (p *paramList) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	if why, reserved := auth.ReservedAuthParam(name); reserved {
		return fmt.Errorf("%s cannot be set: %s", name, why)
	}
	for _, kv := range *p {
		if kv[0] == name {
			return fmt.Errorf("%s given twice", name)
		}
	}
	*p = append(*p, [2]string{name, value})
	return nil
}

// values returns the parameters as url.Values (nil for none).
func (p paramList) values() url.Values {
	if len(p) == 0 {
		return nil
	}
	v := url.Values{}
	for _, kv := range p {
		v.Set(kv[0], kv[1])
	}
	return v
}
