package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

const serveUsage = `usage: mcp-stdio serve [flags] [-- CMD ARGS...]
       mcp-stdio serve [flags] --config FILE

Publish a local stdio MCP server over Streamable HTTP: every session a
client opens (with initialize) gets its own CMD process, ended with the
session. Without CMD the bundled example server is published.

Clients connect to http://LISTEN/PATH; clients that speak only the older
HTTP+SSE transport (2024-11-05) to http://LISTEN/sse (see --sse-path,
--message-path, --no-sse). Browser pages are refused unless
their origin is loopback, --public-url or --allow-origin. Set a bearer token
with the MCP_STDIO_SERVE_TOKEN environment variable (or --auth-token, which
shows in ps) before listening anywhere but loopback.

Sessions a client leaves without DELETE end after --session-idle-timeout
(30 minutes); at --max-sessions a new session takes the place of the one
idle the longest. Started by the npm package's launcher (npx mcp-stdio
serve), or by any parent that sets MCP_STDIO_PARENT_PID to its own process
id, serve drains and exits when that parent dies.

With --config FILE, every server of a Claude Desktop configuration (the
whole claude_desktop_config.json, or its "mcpServers" object alone) is
published on the one listener: server NAME at http://LISTEN/NAME/mcp (and
/NAME/sse, /NAME/message for HTTP+SSE), each with its own sessions,
processes and limits (--max-sessions … count per server), behind the same
Origin/Host checks and token or OAuth; other paths get 404. NAME is 1 to 64 ASCII
letters, digits, '-', '_' or '.' (not first). Entries give "command", "args",
"env" (added to serve's environment) and "cwd" (relative to FILE's
directory); an entry with "url" is refused. With OAuth the servers are one
protected resource, the listener (http://LISTEN/): one sign-in for all.
SIGHUP reads FILE again: servers added, changed or removed are, the others
are left as they are.

DURATION is seconds (30) or a Go duration (30s, 5m, 1h); BYTES is a number
of bytes, or one with KiB, MiB or GiB (64MiB).

Flags:
`

// serveHelpFooter follows the flags in serve's help.
const serveHelpFooter = `
Also accepted:
  --healthEndpoint PATH   (supergateway's name for --health-path)
  --ssePath PATH          (supergateway's name for --sse-path)
  --messagePath PATH      (supergateway's name for --message-path)
  --named-server-config FILE (mcp-proxy's name for --config)
  --ignore-tool GLOB      (mcp-remote's name for --deny-tool)
`

// serveHelp is how serve's help lists its flags.
func serveHelp(maxBufferedNote, maxConnsNote string) helpLayout {
	return helpLayout{
		order: []string{"listen", "config", "path", "sse-path", "message-path", "no-sse", "auth-token", "require-scope", "public-url", "allow-origin", "allow-host",
			"enable-oauth", "oauth-password-file", "allow-redirect-uri", "token-store", "trusted-proxy", "allow-client-id-url", "oauth-issuer", "oauth-introspection-client-id", "oauth-introspection-rate",
			"health-path", "admin-addr", "allow-tool", "deny-tool", "drop-client-capability", "session-idle-timeout", "max-sessions",
			"modern-only", "accept-claimless-resource-read", "modern-idle-ttl", "max-modern-children", "max-listens", "cache-ttl-ms", "state-key", "state-key-file", "replica-id", "input-timeout", "root",
			"max-body", "max-message-size", "max-depth", "max-buffered", "max-connections", "read-timeout",
			"conn-idle-timeout", "stdin-grace", "term-grace", "drain-timeout", "log-level", "log-format"},
		hidden:   []string{"healthEndpoint", "ssePath", "messagePath", "named-server-config", "ignore-tool"},
		defaults: map[string]string{"auth-token": "$" + pipeline.ServeTokenEnv, "state-key": "$" + pipeline.StateKeyEnv + ", else a new one at start", "replica-id": "$POD_NAME, else $HOSTNAME up to its first '.', else none", "max-buffered": maxBufferedNote, "max-connections": maxConnsNote},
	}
}

// cacheTTL is ServeConfig.CacheTTL for --cache-ttl-ms ms: 0 is ttlMs 0,
// which the config spells as a negative duration.
func cacheTTL(ms int64) time.Duration {
	if ms == 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// Defaults of the serve command.
const (
	defaultServeListen = "127.0.0.1:8080"
	serveShutdownSlack = 2 * time.Second // beyond the children's TermGrace
	serveHeaderTimeout = 30 * time.Second
	serveIdleConnTime  = 2 * time.Minute // keep-alive connections without a request
	// serveMaxHeaderBytes bounds a request's header (431 beyond), and so
	// what each connection can make the gateway buffer before a handler
	// runs; MCP requests carry a few short fields and a token.
	serveMaxHeaderBytes = 64 << 10
)

// serveFlags are the serve command's settings.
type serveFlags struct {
	listen      string
	configFile  string // --config: several servers from Claude Desktop's configuration
	path        string
	ssePath     string
	messagePath string
	noSSE       bool
	authToken   string
	// requireScopes are the scopes every OAuth access token must grant.
	requireScopes stringList
	issuer        issuerFlags // resource-server mode
	allowOrigins  stringList
	allowHosts    stringList
	clientIDURLs  stringList
	publicURL     string
	healthPath    string
	adminAddr     string
	dropCaps      stringList
	tools         toolFilterFlags
	idleTimeout   duration
	maxSessions   int
	modernIdle    duration
	maxModern     int
	maxListens    int
	modernOnly    bool
	claimless     bool
	stateKey      string
	stateKeyFile  string
	replicaID     string
	inputTimeout  duration
	roots         stringList
	cacheTTLMs    int64
	maxBody       byteSize
	maxMessage    byteSize
	maxDepth      int
	maxBuffered   byteSize
	maxConns      int
	readTimeout   duration
	connIdle      duration
	stdinGrace    duration
	termGrace     duration
	drainTimeout  duration
	logLevel      logLevel
	logFormat     logFormat
	oauth         serveOAuthFlags
}

// newServeFlagSet defines serve's flags on a new flag set, and returns it
// with the help's layout.
func newServeFlagSet(f *serveFlags) (*flag.FlagSet, helpLayout) {
	fs := newFlagSet("mcp-stdio serve")
	f.maxBody = frame.DefaultMaxMessageSize
	f.maxMessage = frame.DefaultMaxMessageSize
	f.idleTimeout = duration(pipeline.DefaultSessionIdleTimeout)
	f.readTimeout = duration(transport.DefaultBodyReadTimeout)
	f.modernIdle = duration(pipeline.DefaultModernIdleTTL)
	f.inputTimeout = duration(mw.DefaultStateTTL)
	f.connIdle = duration(serveIdleConnTime)
	f.stdinGrace = duration(transport.DefaultStdinGrace)
	f.termGrace = duration(transport.DefaultTermGrace)
	f.drainTimeout = duration(pipeline.DefaultServeDrainTimeout)
	f.logLevel = logLevel(slog.LevelInfo)
	fs.StringVar(&f.listen, "listen", defaultServeListen, "listen on `ADDR`, host:port (port 0 picks a free one; :0 or 0.0.0.0:PORT listen on every interface)")
	fs.StringVar(&f.configFile, "config", "", "publish every stdio server of Claude Desktop's configuration `FILE` (the whole file, {\"mcpServers\": {...}}, or that object alone): each NAME at /NAME/mcp (/NAME/sse, /NAME/message), with command, args, env (added to serve's environment) and cwd; entries with url are refused; no -- CMD with it")
	fs.StringVar(&f.configFile, "named-server-config", "", "mcp-proxy's name for --config")
	fs.StringVar(&f.path, "path", pipeline.DefaultServePath, "serve the MCP endpoint at `PATH`")
	fs.StringVar(&f.ssePath, "sse-path", pipeline.DefaultSSEPath, "serve the HTTP+SSE stream, for clients of 2024-11-05, at `PATH`")
	fs.StringVar(&f.messagePath, "message-path", pipeline.DefaultMessagePath, "take HTTP+SSE clients' messages at `PATH` (the stream's endpoint event names it)")
	fs.StringVar(&f.ssePath, "ssePath", pipeline.DefaultSSEPath, "supergateway's name for --sse-path")
	fs.StringVar(&f.messagePath, "messagePath", pipeline.DefaultMessagePath, "supergateway's name for --message-path")
	fs.BoolVar(&f.noSSE, "no-sse", false, "serve Streamable HTTP only: no HTTP+SSE stream and message paths")
	fs.StringVar(&f.authToken, "auth-token", "", "require `TOKEN` as the bearer token of every request (prefer the "+pipeline.ServeTokenEnv+" env var: flags show in ps)")
	f.issuer.define(fs)
	fs.Var(&f.requireScopes, "require-scope", "with OAuth, require `SCOPE` of every access token: 403 insufficient_scope without it (repeatable)")
	fs.Var(&f.allowOrigins, "allow-origin", "also allow browser pages from `ORIGIN`, exact match, any scheme (repeatable)")
	fs.Var(&f.allowHosts, "allow-host", "also allow `NAME` in the Host header when listening on loopback (repeatable)")
	fs.Var(&f.clientIDURLs, "allow-client-id-url", "let the OAuth client whose client_id is `URL` (exact, https) sign in with the Client ID Metadata Document it serves there (repeatable)")
	fs.StringVar(&f.healthPath, "health-path", "", "answer GET `PATH` with 200 \"ok\", before any check, for load balancers and probes (off by default)")
	fs.StringVar(&f.healthPath, "healthEndpoint", "", "supergateway's name for --health-path")
	fs.StringVar(&f.adminAddr, "admin-addr", "", "serve /healthz, /readyz and /metrics (Prometheus) on a listener of their own at `HOST:PORT`, without authentication or Origin/Host checks (off by default)")
	fs.StringVar(&f.publicURL, "public-url", "", "the server's external `URL` (behind a proxy or tunnel); its origin and host are allowed, and its path prefixes the HTTP+SSE endpoint event's")
	f.tools.register(fs)
	fs.Var(&f.dropCaps, "drop-client-capability", "remove `CAPABILITY` (roots, sampling or elicitation) from the client's initialize before the server sees it (repeatable)")
	fs.Var(&f.idleTimeout, "session-idle-timeout", "end a session (and its process) idle for `DURATION`: no request in flight, no stream open (0 = never; clients that never send DELETE leave theirs until then, or until --max-sessions needs the room)")
	fs.IntVar(&f.maxSessions, "max-sessions", mw.DefaultMaxSessions, "keep at most `N` sessions (processes) at once; at the limit a new session takes the place of the one idle the longest, whose client's next request gets 404 (it initializes again); when every session is busy, 503 with Retry-After")
	fs.BoolVar(&f.modernOnly, "modern-only", false, "serve 2026-07-28 clients only: session-era requests get -32022, GET and DELETE 405, no HTTP+SSE")
	fs.BoolVar(&f.claimless, "accept-claimless-resource-read", false, "take a resources/read that names no protocol version and no session (the Claude iOS app's) as a 2026-07-28 request")
	fs.Var(&f.modernIdle, "modern-idle-ttl", "stop the process serving a user's 2026-07-28 clients once it has had no request for `DURATION` (0 = never)")
	fs.IntVar(&f.maxModern, "max-modern-children", mw.DefaultMaxPooledChildren, "run at most `N` processes for 2026-07-28 clients (one per user) at once; more users get 503")
	fs.IntVar(&f.maxListens, "max-listens", mw.DefaultMaxListens, "keep at most `N` subscriptions/listen streams open on one 2026-07-28 process, its clients' together (a dual-era server gets one listen asking for the union of their filters, fanned out); more get 503")
	fs.StringVar(&f.stateKey, "state-key", "", "seal the requestState of 2026-07-28 multi round-trip requests with `KEY` (32 bytes, hex or base64; replicas that share clients share it; prefer the "+pipeline.StateKeyEnv+" env var)")
	fs.StringVar(&f.stateKeyFile, "state-key-file", "", "read the --state-key from `PATH` once at start (hex or base64; the file must not be readable by group or others)")
	fs.StringVar(&f.replicaID, "replica-id", "", "begin every session id with `ID` and a '.', so that a proxy can route a session to this replica (letters, digits, '-', '_'); requestStates given out here are honoured here only")
	fs.Var(&f.inputTimeout, "input-timeout", "let a 2026-07-28 call whose server of the session era asked the client for input wait `DURATION` for the client's retry; then its requestState expires and the call is cancelled")
	fs.Var(&f.roots, "root", "answer roots/list of a session-era server serving 2026-07-28 clients with the root `PATH` (or a file:// URI) when no single client can be asked: its first roots/list (the roots of its connection, which all its clients share), and one sent at start-up or while no call or several are in flight (repeatable; none by default)")
	fs.Int64Var(&f.cacheTTLMs, "cache-ttl-ms", mw.DefaultCacheTTL.Milliseconds(), "let 2026-07-28 clients keep lists and reads of a server of the session era for `MS` milliseconds (its results' ttlMs)")
	fs.Var(&f.maxBody, "max-body", "refuse request bodies larger than `BYTES` with 413")
	fs.Var(&f.maxMessage, "max-message-size", "refuse lines larger than `BYTES` from the server process")
	fs.IntVar(&f.maxDepth, "max-depth", frame.DefaultMaxDepth, "refuse request bodies and server lines whose JSON nests deeper than `N` levels (400, or an error for the request a response answers)")
	fs.Var(&f.maxBuffered, "max-buffered", "hold at most `BYTES` of messages at once, all sessions together; a request body beyond gets 503, a server's message beyond is answered with an error (at least --max-body and --max-message-size)")
	fs.IntVar(&f.maxConns, "max-connections", defaultMaxConns(f), "keep at most `N` HTTP connections open; a keep-alive connection between requests is never closed to make room; at the limit a new one takes the place of one silent since its accept (a request that one then sends gets 503), else waits up to 1s for a slot (answers meanwhile say Connection: close), else gets 503 with Retry-After")
	fs.Var(&f.readTimeout, "read-timeout", "give up a request body that stops arriving for this `DURATION` (408, connection closed; 0 = never)")
	fs.Var(&f.connIdle, "conn-idle-timeout", "close a keep-alive connection that carries no request for this `DURATION`")
	fs.Var(&f.stdinGrace, "stdin-grace", "when a session ends, wait this `DURATION` after closing its process's stdin before SIGTERM (at shutdown, SIGTERM comes at once)")
	fs.Var(&f.termGrace, "term-grace", "after SIGTERM, wait this `DURATION` before SIGKILL")
	fs.Var(&f.drainTimeout, "drain-timeout", "on SIGTERM, SIGINT or SIGHUP, drain for at most this `DURATION` before the children get SIGTERM: new sessions get 503, requests in flight finish; the default and --term-grace fit in Kubernetes' 30s grace period")
	fs.Var(&f.logLevel, "log-level", "log at `LEVEL` on stderr: debug, info, warn or error")
	fs.Var(&f.logFormat, "log-format", "write logs on stderr as `FORMAT`: text (key=value lines) or json (one object per line, a record per request at info, the servers' stderr lines as records of their own)")
	f.oauth.define(fs)

	mem, known := machineMemory()
	note := "a quarter of this machine's memory, here " + formatSize(defaultMaxBuffered(mem, known, 0))
	if !known {
		note = formatSize(defaultMaxBuffered(mem, known, 0)) + ": this machine's memory is unknown"
	}
	conns := fmt.Sprintf("(the open-file limit, raised to its hard limit at start, − %d − %d × (--max-sessions + --max-modern-children) − 64 refusals) × 16/17, leaving a seventeenth for connections waiting for a slot; here %d",
		transport.FDReserve, transport.FDPerChild, defaultMaxConns(f))
	return fs, serveHelp(note, conns)
}

// defaultMaxConns is --max-connections' default: what the open-file limit
// (raised to the hard limit) leaves once the children's pipes and the
// listeners have theirs (see transport.ConnectionLimit).
func defaultMaxConns(f *serveFlags) int {
	return transport.ConnectionLimit(transport.RaiseFileLimit(), f.maxSessions+f.maxModern)
}

// Serve is the serve command: mcp-stdio serve [flags] [-- CMD ARGS...].
func Serve(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer, opt Options) error {
	var f serveFlags
	fs, layout := newServeFlagSet(&f)
	flags := usagePrinter(fs, serveUsage, layout)
	usage := func(w io.Writer) {
		flags(w)
		fmt.Fprint(w, serveHelpFooter)
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err, "mcp-stdio serve", usage, stdout, stderr)
	}
	if !flagSet(fs, "auth-token") {
		f.authToken = getenv(pipeline.ServeTokenEnv)
	}
	f.issuer.readEnv(getenv)
	if !flagSet(fs, "state-key") && !flagSet(fs, "state-key-file") {
		f.stateKey = getenv(pipeline.StateKeyEnv)
	}
	if !flagSet(fs, "replica-id") {
		f.replicaID = defaultReplicaID(getenv)
	}
	logger := newLogger(stderr, f.logLevel.level(), f.logFormat)
	if f.replicaID != "" {
		logger = logger.With("replica", f.replicaID)
	}
	if !flagSet(fs, "max-connections") {
		f.maxConns = defaultMaxConns(&f)
	}
	if !flagSet(fs, "max-buffered") {
		mem, known := machineMemory()
		f.maxBuffered = byteSize(defaultMaxBuffered(mem, known, int64(max(f.maxBody, f.maxMessage))))
	}
	cfg, desc, err := f.config(fs.Args(), stderr, logger)
	cfg.Version, cfg.Rand = opt.Version, opt.Rand
	if err != nil {
		fmt.Fprintf(stderr, "mcp-stdio serve: %v (run 'mcp-stdio serve --help' for the flags)\n", err)
		return &ExitError{Code: ExitUsage}
	}
	if f.logFormat == logJSON {
		cfg.AccessLogInfo, cfg.ChildStderrRecords = true, true
	}
	spans, sampler := otelFromEnv(getenv, opt.Version, "mcp-stdio serve", logger)
	if spans != nil {
		cfg.Spans, cfg.Sampler = spans, sampler
		// At exit, after the drain and the children's grace: the little
		// time left of Kubernetes' grace (see serveShutdownSlack), not the
		// exporter's timeout, so that a hung collector cannot turn a
		// clean exit into a SIGKILL.
		defer shutdownSpans(ctx, spans, serveShutdownSlack, logger)
	}
	var servers []pipeline.MultiServer // with --config
	if f.configFile != "" {
		if servers, err = f.serversConfig(fs.Args()); err != nil {
			fmt.Fprintf(stderr, "mcp-stdio serve: %v\n", err)
			return &ExitError{Code: ExitUsage}
		}
		if err := checkServers(servers); err != nil {
			fmt.Fprintf(stderr, "mcp-stdio serve: --config %s: %v\n", f.configFile, err)
			return &ExitError{Code: ExitFailure}
		}
	} else if err := checkCommand(cfg.Command); err != nil {
		// A command that cannot run would fail every session with a 502:
		// better to say so now, once.
		fmt.Fprintf(stderr, "mcp-stdio serve: %v\n", err)
		return &ExitError{Code: ExitFailure}
	}
	if opt.OwnProcess {
		tuneServeProcess(getenv, logger)
		// A parent (the npm launcher) that asks for it: serve ends with it.
		var stopWatch func()
		ctx, stopWatch = endWithParent(ctx, getenv, logger)
		defer stopWatch()
		if f.configFile == "" {
			// SIGHUP (the terminal closed) drains as SIGTERM does; with
			// --config it reads the file again instead (watchReload).
			var stopHangup func()
			ctx, stopHangup = endOnHangup(ctx)
			defer stopHangup()
		}
	}
	// Listen first: without --public-url, the embedded authorization
	// server's issuer is the address bound.
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-stdio serve: %s\n", listenRemedy("--listen", f.listen, err))
		return &ExitError{Code: ExitFailure}
	}
	if cfg.CheckHost {
		cfg.AllowHosts = append(cfg.AllowHosts, ownHosts(f.listen, ln.Addr())...)
	}
	var issuer string
	cfg.OAuth, issuer, err = f.oauthConfig(ctx, ln.Addr(), stderr, logger)
	defer f.oauth.close(logger) // after the shutdown: the store's last batch
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "mcp-stdio serve: %v\n", err)
		return &ExitError{Code: ExitUsage}
	}
	cfg.Metrics = f.adminAddr != ""
	srv, err := newServePipeline(cfg, servers)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "mcp-stdio serve: %v\n", err)
		return &ExitError{Code: ExitUsage}
	}
	var adminLn net.Listener
	if f.adminAddr != "" {
		if adminLn, err = net.Listen("tcp", f.adminAddr); err != nil {
			ln.Close()
			srv.Close(context.WithoutCancel(ctx))
			fmt.Fprintf(stderr, "mcp-stdio serve: %s\n", listenRemedy("--admin-addr", f.adminAddr, err))
			return &ExitError{Code: ExitFailure}
		}
	}
	limited := transport.LimitConnections(ln, f.maxConns, logger)
	ln = limited
	logger.Debug("limits", "max_connections", f.maxConns, "max_buffered", int64(f.maxBuffered), "read_timeout", f.readTimeout.std(), "conn_idle_timeout", f.connIdle.std())
	reach := reachability(ln.Addr())
	if reach != reachLoopback && cfg.AuthToken == "" && cfg.OAuth == nil {
		logger.Warn("listening beyond loopback without authentication: anyone who can reach this address can run the server; set " + pipeline.ServeTokenEnv + " (or listen on 127.0.0.1)")
	}
	// The main listener's server holds no buffer for a connection between
	// its requests: thousands of keep-alive clients cost little.
	httpSrv := &transport.HTTP1Server{
		Handler:           limited.Handler(srv.Handler()), // Connection: close while connections wait for a slot
		ConnState:         limited.ConnState,              // which connections are sending a head, to make room at the limit
		ConnContext:       limited.ConnContext,
		ReadHeaderTimeout: serveHeaderTimeout,
		IdleTimeout:       f.connIdle.std(),
		MaxHeaderBytes:    serveMaxHeaderBytes,
		Logger:            logger,
	}
	served := make(chan error, 1)
	go func() { served <- httpSrv.Serve(ln) }()
	var adminSrv *http.Server
	adminServed := make(chan error, 1)
	if adminLn != nil {
		adminSrv = &http.Server{
			Handler:           srv.AdminHandler(),
			ReadHeaderTimeout: serveHeaderTimeout,
			IdleTimeout:       f.connIdle.std(),
			MaxHeaderBytes:    serveMaxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		}
		go func() { adminServed <- adminSrv.Serve(adminLn) }()
		if reachability(adminLn.Addr()) != reachLoopback {
			logger.Info("the admin endpoints (/healthz, /readyz, /metrics) have no authentication: keep --admin-addr reachable only by probes and scrapers")
		}
	}
	// The startup lines: plain, or with --log-format json records like
	// any other, the URL in a field of its own.
	say := func(url, format string, args ...any) {
		if f.logFormat == logJSON {
			logger.Info(fmt.Sprintf(format, args...), "url", url)
			return
		}
		fmt.Fprintf(stderr, "mcp-stdio: "+format+"\n", args...)
	}
	if servers != nil {
		say("", "serving %d servers of %s on %s (%s)", len(servers), f.configFile, ln.Addr(), reach)
		for _, s := range servers {
			endpoint := endpointURL(ln.Addr(), f.listen, "/"+s.Name+cfg.Path)
			say(endpoint, "server %s (%s) at %s", s.Name, shellQuote(s.Command), endpoint)
			if !cfg.NoSSE && !cfg.ModernOnly {
				sse := endpointURL(ln.Addr(), f.listen, "/"+s.Name+cfg.SSEPath)
				say(sse, "server %s: HTTP+SSE clients (2024-11-05) connect to %s", s.Name, sse)
			}
		}
	} else {
		endpoint := endpointURL(ln.Addr(), f.listen, cfg.Path)
		say(endpoint, "serving %s on %s (%s) at %s", desc, ln.Addr(), reach, endpoint)
	}
	if !cfg.NoSSE && servers == nil {
		sse := endpointURL(ln.Addr(), f.listen, cfg.SSEPath)
		say(sse, "HTTP+SSE clients (2024-11-05) connect to %s", sse)
	}
	if adminLn != nil {
		admin := endpointURL(adminLn.Addr(), f.adminAddr, "")
		say(admin, "admin endpoints on %s (%s): /healthz, /readyz, /metrics", admin, reachability(adminLn.Addr()))
	}
	if issuer != "" {
		store := "memory only: a restart signs everyone out"
		if f.oauth.tokenStore != "" {
			store = "kept in " + f.oauth.tokenStore
		}
		say(issuer, "OAuth authorization server %s (sign-ins %s)", issuer, store)
	}
	if opt.OwnProcess {
		releaseStartupPages(logger) // started: what only starting ran leaves the resident set
	}

	stopReload := func() {}
	if m, ok := srv.(*pipeline.Multi); ok && opt.OwnProcess {
		stopReload = watchReload(func() {
			f.reloadServers(context.WithoutCancel(ctx), m, func(name string, command []string) {
				endpoint := endpointURL(ln.Addr(), f.listen, "/"+name+cfg.Path)
				say(endpoint, "server %s (%s) at %s", name, shellQuote(command), endpoint)
			}, logger)
		})
	}
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-served:
		runErr = fmt.Errorf("serve: %w", err)
	case err := <-adminServed:
		runErr = fmt.Errorf("serve: admin listener: %w", err)
	}
	stopReload() // a reload under way ends first
	drainCtx, stopDrain := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDrain()
	if opt.OwnProcess {
		// The first SIGTERM or SIGINT started the drain; another one ends it.
		stopWatch := onSignal(func() {
			logger.Info("a second signal: ending the drain now")
			stopDrain()
		})
		defer stopWatch()
	}
	serveShutdown(srv, httpSrv, drainCtx, f.termGrace.std(), logger)
	// The admin listener last: /readyz says 503 for the whole drain.
	if adminSrv != nil {
		actx, cancel := context.WithTimeout(context.Background(), serveShutdownSlack)
		if err := adminSrv.Shutdown(actx); err != nil {
			adminSrv.Close()
		}
		cancel()
	}
	if runErr == nil {
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("serve: %w", err)
		}
	}
	return runErr
}

// serveShutdown shuts serve down: it drains with the listener still open
// (new sessions are refused, everything else is served, until nothing is
// in flight or the drain timeout; see pipeline.Server.Drain), which
// drainCtx ending cuts short; then the listener closes; then every
// session ends (its streams end, a request still waiting gets an error)
// and each child's process group gets SIGTERM, then SIGKILL after
// termGrace. It returns once every child is gone and the HTTP server has
// stopped.
func serveShutdown(srv servePipeline, httpSrv *transport.HTTP1Server, drainCtx context.Context, termGrace time.Duration, logger *slog.Logger) {
	srv.Drain(drainCtx)
	// Once the drain is over: a bound for the children's stop, past which
	// they are killed at once, and one for the handlers to return.
	sctx, cancel := context.WithTimeout(context.Background(), max(termGrace, transport.DefaultTermGrace)+serveShutdownSlack)
	defer cancel()
	listenerClosed := make(chan struct{})
	httpSrv.RegisterOnShutdown(func() { close(listenerClosed) }) // run once the listeners are closed
	shutdown := make(chan error, 1)
	go func() { shutdown <- httpSrv.Shutdown(sctx) }()
	<-listenerClosed
	if err := srv.Close(sctx); err != nil {
		logger.Warn("server processes still running at the shutdown deadline were killed", "err", err)
	}
	if err := <-shutdown; err != nil {
		httpSrv.Close()
	}
}

// config checks the flags and the child command and turns them into the
// pipeline's configuration, with a description of the child for the
// startup line.
func (f *serveFlags) config(command []string, stderr io.Writer, logger *slog.Logger) (pipeline.ServeConfig, string, error) {
	var cfg pipeline.ServeConfig
	desc := ""
	exe, exeErr := os.Executable()
	if len(command) == 0 {
		if exeErr != nil {
			return cfg, "", fmt.Errorf("cannot find this program to run its example server: %v", exeErr)
		}
		command = []string{exe, ExampleServerCommand}
		desc = "the bundled example server"
	} else {
		desc = shellQuote(command)
	}
	// Every child runs under this program's supervisor, so that what it
	// starts ends with the gateway however the gateway ends.
	var supervisor []string
	if exeErr == nil {
		supervisor = []string{exe, SuperviseCommand}
	} else {
		logger.Warn("cannot find this program to supervise the server processes: what they start may outlive a killed gateway", "err", exeErr)
	}
	if f.path == "" || f.path[0] != '/' {
		return cfg, "", fmt.Errorf("--path %q must start with /", f.path)
	}
	if !f.noSSE {
		for _, p := range []struct{ flag, path string }{{"--sse-path", f.ssePath}, {"--message-path", f.messagePath}} {
			switch {
			case p.path == "" || p.path[0] != '/':
				return cfg, "", fmt.Errorf("%s %q must start with /", p.flag, p.path)
			case p.path == f.path:
				return cfg, "", fmt.Errorf("%s %q is the path of the Streamable HTTP endpoint (--path); choose another, or --no-sse", p.flag, p.path)
			}
		}
	}
	if f.maxSessions <= 0 {
		return cfg, "", errors.New("--max-sessions must be positive")
	}
	var stateKey []byte
	if f.stateKeyFile != "" {
		if f.stateKey != "" {
			return cfg, "", errors.New("--state-key and --state-key-file are exclusive: give one")
		}
		k, err := readStateKeyFile(f.stateKeyFile)
		if err != nil {
			return cfg, "", err
		}
		stateKey = k
	} else if f.stateKey != "" {
		k, err := mw.ParseStateKey(f.stateKey)
		if err != nil {
			return cfg, "", fmt.Errorf("invalid --state-key (or %s): %v", pipeline.StateKeyEnv, err)
		}
		stateKey = k
	}
	if f.replicaID != "" {
		if err := mw.CheckReplicaID(f.replicaID); err != nil {
			return cfg, "", fmt.Errorf("invalid --replica-id (or $POD_NAME, $HOSTNAME): %v; set --replica-id", err)
		}
	}
	if f.maxModern <= 0 {
		return cfg, "", errors.New("--max-modern-children must be positive")
	}
	if f.maxListens <= 0 {
		return cfg, "", errors.New("--max-listens must be positive")
	}
	if f.inputTimeout <= 0 {
		return cfg, "", errors.New("--input-timeout must be positive")
	}
	if f.cacheTTLMs < 0 {
		return cfg, "", errors.New("--cache-ttl-ms must not be negative")
	}
	if f.maxBody <= 0 || f.maxMessage <= 0 {
		return cfg, "", errors.New("--max-body and --max-message-size must be positive")
	}
	if int64(f.maxBuffered) < int64(max(f.maxBody, f.maxMessage)) {
		return cfg, "", fmt.Errorf("--max-buffered (%d) must be at least --max-body and --max-message-size (%d), or the largest message could never pass", f.maxBuffered, max(f.maxBody, f.maxMessage))
	}
	if f.maxConns <= 0 {
		return cfg, "", errors.New("--max-connections must be positive")
	}
	if f.maxDepth <= 0 {
		return cfg, "", errors.New("--max-depth must be positive")
	}
	if f.healthPath != "" && (f.healthPath[0] != '/' || f.healthPath == f.path) {
		return cfg, "", fmt.Errorf("--health-path %q must start with / and differ from --path", f.healthPath)
	}
	if f.healthPath != "" && !f.noSSE && (f.healthPath == f.ssePath || f.healthPath == f.messagePath) {
		return cfg, "", fmt.Errorf("--health-path %q must differ from --sse-path and --message-path", f.healthPath)
	}
	if f.connIdle <= 0 {
		return cfg, "", errors.New("--conn-idle-timeout must be positive")
	}
	if f.publicURL != "" {
		u, err := url.Parse(f.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, "", fmt.Errorf("invalid --public-url %q: want http(s)://host[/path]", f.publicURL)
		}
	}
	for _, u := range f.clientIDURLs {
		if err := server.CheckClientIDURL(u); err != nil {
			return cfg, "", err
		}
	}
	if err := f.oauth.check(f); err != nil {
		return cfg, "", err
	}
	for _, c := range f.dropCaps {
		switch c {
		case "roots", "sampling", "elicitation":
		default:
			return cfg, "", fmt.Errorf("invalid --drop-client-capability %q: want roots, sampling or elicitation", c)
		}
	}
	roots, err := rootURIs(f.roots)
	if err != nil {
		return cfg, "", err
	}
	if err := f.tools.check(); err != nil {
		return cfg, "", err
	}
	idle := f.idleTimeout.orOff()
	readTimeout := f.readTimeout.orOff()
	cfg = pipeline.ServeConfig{
		Command:                     command,
		Supervisor:                  supervisor,
		Path:                        f.path,
		SSEPath:                     f.ssePath,
		MessagePath:                 f.messagePath,
		NoSSE:                       f.noSSE,
		AuthToken:                   f.authToken,
		AllowOrigins:                f.allowOrigins,
		CheckHost:                   isLoopbackListener(f.listen) || len(f.allowHosts) > 0,
		AllowHosts:                  f.allowHosts,
		PublicURL:                   f.publicURL,
		HealthPath:                  f.healthPath,
		DropClientCapabilities:      f.dropCaps,
		AllowTools:                  f.tools.allow,
		DenyTools:                   f.tools.deny,
		MaxSessions:                 f.maxSessions,
		SessionIdleTimeout:          idle,
		MaxModernChildren:           f.maxModern,
		MaxListens:                  f.maxListens,
		ModernOnly:                  f.modernOnly,
		AcceptClaimlessResourceRead: f.claimless,
		ModernIdleTTL:               time.Duration(f.modernIdle),
		StateKey:                    stateKey,
		ReplicaID:                   f.replicaID,
		InputTimeout:                f.inputTimeout.std(),
		Roots:                       roots,
		CacheTTL:                    cacheTTL(f.cacheTTLMs),
		MaxBodySize:                 int64(f.maxBody),
		MaxMessageSize:              int(f.maxMessage),
		MaxDepth:                    f.maxDepth,
		ReadTimeout:                 readTimeout,
		Budget:                      frame.NewBudget(int64(f.maxBuffered)),
		StdinGrace:                  f.stdinGrace.std(),
		TermGrace:                   f.termGrace.std(),
		DrainTimeout:                f.drainTimeout.std(),
		ChildStderr:                 stderr,
		Logger:                      logger,
	}
	return cfg, desc, nil
}

// rootURIs turns --root values into URIs: a file:// URI as it is, a path
// into the file:// URI of its absolute form.
func rootURIs(values []string) ([]string, error) {
	var uris []string
	for _, v := range values {
		if strings.HasPrefix(v, "file://") {
			if _, err := url.Parse(v); err != nil {
				return nil, fmt.Errorf("invalid --root %q: %v", v, err)
			}
			uris = append(uris, v)
			continue
		}
		if strings.Contains(v, "://") || v == "" {
			return nil, fmt.Errorf("invalid --root %q: give a directory's path or a file:// URI", v)
		}
		abs, err := filepath.Abs(v)
		if err != nil {
			return nil, fmt.Errorf("invalid --root %q: %v", v, err)
		}
		p := filepath.ToSlash(abs)
		if !strings.HasPrefix(p, "/") {
			p = "/" + p // C:/x
		}
		uris = append(uris, (&url.URL{Scheme: "file", Path: p}).String())
	}
	return uris, nil
}

// ownHosts returns the loopback addresses a serve listening on listen,
// bound to bound, is addressed as, for the Host check: a replica on
// 127.0.0.2 is reached as 127.0.0.2, which the check's fixed loopback
// names (localhost, 127.0.0.1, [::1]) do not cover. They come from the
// listener, never from a request; an address beyond loopback is never
// added (--allow-host names those).
func ownHosts(listen string, bound net.Addr) []string {
	var hosts []string
	for _, a := range []string{listen, bound.String()} {
		h, _, err := net.SplitHostPort(a)
		if ip := net.ParseIP(h); err == nil && ip != nil && ip.IsLoopback() && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// defaultReplicaID is --replica-id when the flag is not given: $POD_NAME
// (a Kubernetes pod's name, set through the downward API), else
// $HOSTNAME up to its first '.' (a container's hostname is its pod's
// name; a machine's may be a fully qualified name), else none.
func defaultReplicaID(getenv func(string) string) string {
	if id := getenv("POD_NAME"); id != "" {
		return id
	}
	id, _, _ := strings.Cut(getenv("HOSTNAME"), ".")
	return id
}

// maxStateKeyFile bounds what --state-key-file reads: a key in base64
// with whitespace around it is far less.
const maxStateKeyFile = 1 << 10

// readStateKeyFile reads the state key from path, which must not be
// readable by group or others.
func readStateKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--state-key-file: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("--state-key-file: %v", err)
	}
	// Group read is allowed: a Kubernetes Secret mounted into a pod whose
	// securityContext sets fsGroup is 0440, group-owned.
	if fi.Mode().Perm()&0o037 != 0 {
		return nil, fmt.Errorf("--state-key-file %s is open to others or writable by its group (mode %v); chmod 600 it (or 640: group read is allowed)", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxStateKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("--state-key-file: %v", err)
	}
	if len(b) > maxStateKeyFile {
		return nil, fmt.Errorf("--state-key-file %s is larger than a key: want %d hex digits or base64 of %d bytes", path, 2*mw.StateKeySize, mw.StateKeySize)
	}
	k, err := mw.ParseStateKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("invalid --state-key-file %s: %v", path, err)
	}
	return k, nil
}

// isLoopbackListener reports whether a listen address binds loopback only.
func isLoopbackListener(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Reachabilities of a bound address, as the startup line says them.
const (
	reachLoopback = "loopback only"
	reachAll      = "all interfaces: reachable from the network"
	reachNetwork  = "reachable from the network"
)

// reachability says who can reach a bound address.
func reachability(bound net.Addr) string {
	host, _, err := net.SplitHostPort(bound.String())
	ip := net.ParseIP(host)
	switch {
	case err != nil || ip == nil:
		return reachNetwork
	case ip.IsLoopback():
		return reachLoopback
	case ip.IsUnspecified():
		return reachAll
	}
	return reachNetwork
}

// checkCommand reports, in a sentence that says what to do, why the server
// command cannot be started: not found, not a file, not executable.
func checkCommand(command []string) error {
	name := command[0]
	path, err := exec.LookPath(name)
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("cannot run the server command %s", shellQuote(command[:1]))
	var st os.FileInfo
	switch {
	case errors.Is(err, exec.ErrDot):
		return fmt.Errorf("%s: it is in the current directory, which PATH lookups skip; write ./%s", what, name)
	case !strings.ContainsAny(name, "/"+string(os.PathSeparator)) && errors.Is(err, exec.ErrNotFound):
		return fmt.Errorf("%s: not found in PATH; give its full path, or install it", what)
	}
	if path == "" {
		path = name
	}
	if st, err = os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: no such file; check the command after --", what)
		}
		return fmt.Errorf("%s: %v", what, err)
	}
	if st.IsDir() {
		return fmt.Errorf("%s: it is a directory; give the program after --", what)
	}
	return fmt.Errorf("%s: it is not executable; make it so (chmod +x %s) or run it through its interpreter", what, shellQuote(command[:1]))
}

// shellQuote writes argv as a shell would read it back, on one line:
// words of plain characters as they are, the others in single quotes, and
// those holding control characters (a newline in a script) in bash's
// $'…' with escapes.
func shellQuote(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case a != "" && strings.Trim(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@%+=:,./_-") == "":
			b.WriteString(a)
		case strings.IndexFunc(a, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
			b.WriteString("$'")
			for _, c := range []byte(a) {
				switch c {
				case '\n':
					b.WriteString(`\n`)
				case '\t':
					b.WriteString(`\t`)
				case '\r':
					b.WriteString(`\r`)
				case '\\', '\'':
					b.WriteByte('\\')
					b.WriteByte(c)
				default:
					if c < 0x20 || c == 0x7f {
						fmt.Fprintf(&b, `\x%02x`, c)
					} else {
						b.WriteByte(c)
					}
				}
			}
			b.WriteByte('\'')
		default:
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
		}
	}
	return b.String()
}

// endpointURL returns the URL clients use: the bound address, with a
// loopback host in place of an unspecified one.
func endpointURL(bound net.Addr, listen, path string) string {
	host, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return "http://" + bound.String() + path
	}
	if lh, _, err := net.SplitHostPort(listen); err == nil && strings.EqualFold(lh, "localhost") {
		host = "localhost"
	} else if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + path
}
