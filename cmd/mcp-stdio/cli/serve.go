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
	"strconv"
	"strings"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

const serveUsage = `usage: mcp-stdio serve [flags] [-- CMD ARGS...]

Publish a local stdio MCP server over Streamable HTTP: every session a
client opens (with initialize) gets its own CMD process, ended with the
session. Without CMD the bundled example server is published.

Clients connect to http://LISTEN/PATH; clients that speak only the older
HTTP+SSE transport (2024-11-05) to http://LISTEN/sse (see --sse-path,
--message-path, --no-sse). Browser pages are refused unless
their origin is loopback, --public-url or --allow-origin. Set a bearer token
with the MCP_STDIO_SERVE_TOKEN environment variable (or --auth-token, which
shows in ps) before listening anywhere but loopback.

Flags:
`

// Defaults of the serve command.
const (
	defaultServeListen = "127.0.0.1:8080"
	serveShutdownSlack = 2 * time.Second // beyond the drain and child graces
	serveHeaderTimeout = 30 * time.Second
	serveIdleConnTime  = 2 * time.Minute // keep-alive connections without a request
	// serveMaxHeaderBytes bounds a request's header (431 beyond), and so
	// what each connection can make the gateway buffer before a handler
	// runs; MCP requests carry a few short fields and a token.
	serveMaxHeaderBytes = 64 << 10
)

// serveFlags are the serve command's settings.
type serveFlags struct {
	listen       string
	path         string
	ssePath      string
	messagePath  string
	noSSE        bool
	authToken    string
	allowOrigins stringList
	allowHosts   stringList
	publicURL    string
	dropCaps     stringList
	idleTimeout  time.Duration
	maxSessions  int
	maxBody      byteSize
	maxMessage   byteSize
	maxBuffered  byteSize
	maxConns     int
	readTimeout  time.Duration
	connIdle     time.Duration
	stdinGrace   time.Duration
	termGrace    time.Duration
	drainTimeout time.Duration
	logLevel     slog.Level
}

func newServeFlagSet(f *serveFlags, getenv func(string) string) *flag.FlagSet {
	fs := flag.NewFlagSet("mcp-stdio serve", flag.ContinueOnError)
	f.authToken = getenv(pipeline.ServeTokenEnv)
	f.maxBody = frame.DefaultMaxMessageSize
	f.maxMessage = frame.DefaultMaxMessageSize
	fs.StringVar(&f.listen, "listen", defaultServeListen, "`address` to listen on, host:port (:0 picks a free port)")
	fs.StringVar(&f.path, "path", pipeline.DefaultServePath, "`path` of the MCP endpoint")
	fs.StringVar(&f.ssePath, "sse-path", pipeline.DefaultSSEPath, "`path` of the HTTP+SSE stream, for clients of 2024-11-05")
	fs.StringVar(&f.messagePath, "message-path", pipeline.DefaultMessagePath, "`path` HTTP+SSE clients POST their messages to")
	fs.BoolVar(&f.noSSE, "no-sse", false, "serve Streamable HTTP only: no HTTP+SSE stream and message paths")
	fs.StringVar(&f.authToken, "auth-token", f.authToken, "static bearer `token` every request must present (prefer the "+pipeline.ServeTokenEnv+" env var: flags show in ps)")
	fs.Var(&f.allowOrigins, "allow-origin", "extra browser `origin` allowed, exact match, any scheme (repeatable)")
	fs.Var(&f.allowHosts, "allow-host", "extra `name` allowed in the Host header when listening on loopback (repeatable)")
	fs.StringVar(&f.publicURL, "public-url", "", "external `URL` of this server (behind a proxy or tunnel); its origin and host are allowed, and its path prefixes the HTTP+SSE endpoint event's")
	fs.Var(&f.dropCaps, "drop-client-capability", "remove client `capability` roots, sampling or elicitation from initialize before the server sees it (repeatable)")
	fs.DurationVar(&f.idleTimeout, "session-idle-timeout", pipeline.DefaultSessionIdleTimeout, "end a session (and its process) idle this `long` (0 = never)")
	fs.IntVar(&f.maxSessions, "max-sessions", mw.DefaultMaxSessions, "most sessions (processes) alive at `once`; more get 503")
	fs.Var(&f.maxBody, "max-body", "largest request body in `bytes` (suffixes KiB, MiB, GiB); larger gets 413")
	fs.Var(&f.maxMessage, "max-message-size", "largest message in `bytes` the server process may write (suffixes KiB, MiB, GiB)")
	mem, known := machineMemory()
	memNote := "a quarter of this machine's memory, here " + formatSize(defaultMaxBuffered(mem, known, 0))
	if !known {
		memNote = formatSize(defaultMaxBuffered(mem, known, 0)) + ": this machine's memory is unknown"
	}
	fs.Var(&f.maxBuffered, "max-buffered", "most message `bytes` held at once, all sessions together (suffixes KiB, MiB, GiB); a request body beyond gets 503, a server's message beyond is answered with an error (default "+memNote+", at least --max-body and --max-message-size)")
	fs.IntVar(&f.maxConns, "max-connections", transport.DefaultMaxConnections, "most HTTP connections open at `once`; more get an immediate 503 and are closed")
	fs.DurationVar(&f.readTimeout, "read-timeout", transport.DefaultBodyReadTimeout, "give up a request body that stops arriving for this `long` (408, connection closed; 0 = never)")
	fs.DurationVar(&f.connIdle, "conn-idle-timeout", serveIdleConnTime, "close a keep-alive connection that carries no request for this `long`")
	fs.DurationVar(&f.stdinGrace, "stdin-grace", transport.DefaultStdinGrace, "after closing a process's stdin, wait this `long` before SIGTERM")
	fs.DurationVar(&f.termGrace, "term-grace", transport.DefaultTermGrace, "after SIGTERM, wait this `long` before SIGKILL")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", pipeline.DefaultServeDrainTimeout, "on shutdown, let requests in flight finish for this `long`")
	fs.TextVar(&f.logLevel, "log-level", slog.LevelInfo, "stderr log `level`: debug, info, warn or error")
	return fs
}

// Serve is the serve command: mcp-stdio serve [flags] [-- CMD ARGS...].
func Serve(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer, opt Options) error {
	var f serveFlags
	fs := newServeFlagSet(&f, getenv)
	fs.SetOutput(stderr)
	usage := setUsage(fs, serveUsage)
	if err := fs.Parse(args); err != nil {
		return parseError(err, fs, usage, stdout, stderr)
	}
	logger := newLogger(stderr, f.logLevel)
	if !flagSet(fs, "max-buffered") {
		mem, known := machineMemory()
		f.maxBuffered = byteSize(defaultMaxBuffered(mem, known, int64(max(f.maxBody, f.maxMessage))))
	}
	cfg, desc, err := f.config(fs.Args(), stderr, logger)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-stdio serve: %v\n", err)
		return &ExitError{Code: ExitUsage}
	}
	if opt.OwnProcess {
		tuneServeProcess(getenv, logger)
	}
	srv, err := pipeline.NewServer(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-stdio serve: %v\n", err)
		return &ExitError{Code: ExitUsage}
	}

	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	ln = transport.LimitConnections(ln, f.maxConns, logger)
	logger.Debug("limits", "max_connections", f.maxConns, "max_buffered", int64(f.maxBuffered), "read_timeout", f.readTimeout, "conn_idle_timeout", f.connIdle)
	loopback := isLoopbackListener(f.listen)
	if !loopback && cfg.AuthToken == "" {
		logger.Warn("listening beyond loopback without authentication: anyone who can reach this address can run the server; set " + pipeline.ServeTokenEnv)
	}
	httpSrv := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: serveHeaderTimeout,
		IdleTimeout:       f.connIdle,
		MaxHeaderBytes:    serveMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- httpSrv.Serve(ln) }()
	fmt.Fprintf(stderr, "mcp-stdio: serving %s at %s\n", desc, endpointURL(ln.Addr(), f.listen, cfg.Path))
	if !cfg.NoSSE {
		fmt.Fprintf(stderr, "mcp-stdio: HTTP+SSE clients (2024-11-05) connect to %s\n", endpointURL(ln.Addr(), f.listen, cfg.SSEPath))
	}

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err := <-served:
		runErr = fmt.Errorf("serve: %w", err)
	}
	bound := f.drainTimeout + f.stdinGrace + f.termGrace + serveShutdownSlack
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	// Drain with the listener still open, so that clients can still answer
	// what a request in flight asks them; then stop accepting, and end the
	// sessions, which ends their streams and lets the handlers return.
	srv.Drain(sctx)
	shutdown := make(chan error, 1)
	go func() { shutdown <- httpSrv.Shutdown(sctx) }()
	if err := srv.Close(sctx); err != nil {
		logger.Warn("sessions still open at the shutdown deadline were killed", "err", err)
	}
	if err := <-shutdown; err != nil {
		httpSrv.Close()
	}
	if runErr == nil {
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("serve: %w", err)
		}
	}
	return runErr
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
		desc = strconv.Quote(strings.Join(command, " "))
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
	if f.maxBody <= 0 || f.maxMessage <= 0 {
		return cfg, "", errors.New("--max-body and --max-message-size must be positive")
	}
	if int64(f.maxBuffered) < int64(max(f.maxBody, f.maxMessage)) {
		return cfg, "", fmt.Errorf("--max-buffered (%d) must be at least --max-body and --max-message-size (%d), or the largest message could never pass", f.maxBuffered, max(f.maxBody, f.maxMessage))
	}
	if f.maxConns <= 0 {
		return cfg, "", errors.New("--max-connections must be positive")
	}
	if f.idleTimeout < 0 || f.stdinGrace < 0 || f.termGrace < 0 || f.drainTimeout < 0 || f.readTimeout < 0 {
		return cfg, "", errors.New("durations must not be negative")
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
	for _, c := range f.dropCaps {
		switch c {
		case "roots", "sampling", "elicitation":
		default:
			return cfg, "", fmt.Errorf("invalid --drop-client-capability %q: want roots, sampling or elicitation", c)
		}
	}
	idle := f.idleTimeout
	if idle == 0 {
		idle = -1 // never
	}
	readTimeout := f.readTimeout
	if readTimeout == 0 {
		readTimeout = -1 // never
	}
	cfg = pipeline.ServeConfig{
		Command:                command,
		Supervisor:             supervisor,
		Path:                   f.path,
		SSEPath:                f.ssePath,
		MessagePath:            f.messagePath,
		NoSSE:                  f.noSSE,
		AuthToken:              f.authToken,
		AllowOrigins:           f.allowOrigins,
		CheckHost:              isLoopbackListener(f.listen) || len(f.allowHosts) > 0,
		AllowHosts:             f.allowHosts,
		PublicURL:              f.publicURL,
		DropClientCapabilities: f.dropCaps,
		MaxSessions:            f.maxSessions,
		SessionIdleTimeout:     idle,
		MaxBodySize:            int64(f.maxBody),
		MaxMessageSize:         int(f.maxMessage),
		ReadTimeout:            readTimeout,
		Budget:                 frame.NewBudget(int64(f.maxBuffered)),
		StdinGrace:             f.stdinGrace,
		TermGrace:              f.termGrace,
		DrainTimeout:           f.drainTimeout,
		ChildStderr:            stderr,
		Logger:                 logger,
	}
	return cfg, desc, nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
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

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// byteSize is a size flag: a number of bytes, optionally with a binary
// suffix (KiB, MiB, GiB; K, M, G and KB, MB, GB mean the same).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	v, mult := splitSizeSuffix(strings.TrimSpace(s))
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return fmt.Errorf("want a size in bytes such as 1048576 or 64MiB, got %q", s)
	}
	*b = byteSize(n * mult)
	return nil
}

// sizeSuffixes are the unit suffixes byteSize accepts, longest first.
var sizeSuffixes = []struct {
	suffix string
	mult   int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
	{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10},
}

// splitSizeSuffix splits a unit suffix off a size and returns the number
// and the unit's multiplier (1 without a suffix).
func splitSizeSuffix(v string) (string, int64) {
	for _, u := range sizeSuffixes {
		if len(v) > len(u.suffix) && strings.EqualFold(v[len(v)-len(u.suffix):], u.suffix) {
			return strings.TrimSpace(v[:len(v)-len(u.suffix)]), u.mult
		}
	}
	return v, 1
}
