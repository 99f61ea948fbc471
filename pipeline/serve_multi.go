// Several serve pipelines on one listener: serve --config.

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw/httpguard"
)

// MaxServerNameLen bounds the length of a server's name (see
// [CheckServerName]).
const MaxServerNameLen = 64

// CheckServerName reports why name cannot name a server published under
// /NAME/ (see [NewMulti]), or nil: a name is 1 to [MaxServerNameLen]
// ASCII letters, digits, '-', '_' and '.', and does not begin with '.'
// (so never "." or "..", nor ".well-known").
func CheckServerName(name string) error {
	if name == "" || len(name) > MaxServerNameLen {
		return fmt.Errorf("server name %q must be 1 to %d characters", name, MaxServerNameLen)
	}
	if name[0] == '.' {
		return fmt.Errorf("server name %q must not begin with '.'", name)
	}
	for _, c := range []byte(name) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return fmt.Errorf("server name %q may hold only ASCII letters, digits, '-', '_' and '.': it becomes a path segment", name)
		}
	}
	return nil
}

// MultiServer is one server of [NewMulti]: a stdio server published
// under /Name/.
type MultiServer struct {
	// Name is the path segment the server is published under; it must
	// pass [CheckServerName].
	Name string
	// Command is the server's program and arguments; required.
	Command []string
	// Env are variables ("K=V") added to the children's environment,
	// which is otherwise the base configuration's (the gateway's own when
	// that is nil); a variable given here wins.
	Env []string
	// Dir is the children's working directory; "" means the base
	// configuration's.
	Dir string
}

// Multi publishes several stdio servers on one listener, each a [Server]
// of its own (its sessions, its pool of 2026-07-28 children, its
// children, its metrics under the label server="NAME"), at
// /NAME/mcp (/NAME then the base Path), and for HTTP+SSE /NAME/sse and
// /NAME/message, behind the same guards: Origin and Host checks and the
// bearer token or OAuth of the base configuration.
type Multi struct {
	base    ServeConfig
	handler http.Handler

	mu      sync.RWMutex
	names   []string // in the order given
	servers map[string]*Server
	entries map[string]MultiServer
	// reload serialises Reload, and Close after it.
	reload sync.Mutex
}

// NewMulti builds one Server per entry of servers from base: each takes
// base's settings and limits (MaxSessions, MaxModernChildren … bound each
// server; a Budget is shared by all), with its own Name, Command, Env and
// Dir, and its paths under /NAME. base.Command is not used. A request
// whose path begins with no server's /NAME/ passes the Origin, Host and
// bearer checks and is then answered 404 with a JSON-RPC error that
// names no server. base.HealthPath, when set, is answered for all.
//
// With base.OAuth, the servers are one protected resource, the listener
// itself: base.OAuth.Resource must be for the path / (its identifier the
// public URL, which covers every /NAME/mcp; its metadata at
// /.well-known/oauth-protected-resource, and, path-aware, at
// /.well-known/oauth-protected-resource/NAME/mcp for each server), so a
// token is good for every server, and the principal it names owns its
// sessions and keys its pool on each. The Routes (an authorization
// server) are served once, beside the servers. Errors name the server.
func NewMulti(base ServeConfig, servers []MultiServer) (*Multi, error) {
	if len(servers) == 0 {
		return nil, errors.New("serve: no servers")
	}
	routes, err := multiOAuthRoutes(base)
	if err != nil {
		return nil, err
	}
	if base.Path == "" {
		base.Path = DefaultServePath
	}
	if base.SSEPath == "" {
		base.SSEPath = DefaultSSEPath
	}
	if base.MessagePath == "" {
		base.MessagePath = DefaultMessagePath
	}
	if base.Env == nil {
		base.Env = os.Environ()
	}
	if base.Logger == nil {
		base.Logger = slog.New(slog.DiscardHandler)
	}
	if base.ChildStderr != nil {
		base.ChildStderr = &lineWriter{w: base.ChildStderr} // one line at a time, all servers together
	}
	m := &Multi{base: base, servers: map[string]*Server{}, entries: map[string]MultiServer{}}
	built, err := m.build(servers, nil)
	if err != nil {
		return nil, err
	}
	for _, e := range servers {
		m.names = append(m.names, e.Name)
		m.servers[e.Name], m.entries[e.Name] = built[e.Name], e
	}
	g := edgeGuardsOf(base)
	unknown := httpguard.Guards(
		g.checkOrigin,
		g.checkHost,
		httpguard.CORS,
		httpguard.Mount(routes),
		g.bearer,
		oauthGuard(base),
	)(http.HandlerFunc(noServer))
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := m.Server(serverOf(r.URL.Path)); s != nil {
			s.Handler().ServeHTTP(w, r)
			return
		}
		if base.OAuth != nil { // the path-aware metadata of a server
			rest, ok := strings.CutPrefix(r.URL.Path, server.MetadataPath)
			if name := serverOf(rest); ok && m.Server(name) != nil && rest == "/"+name+base.Path {
				r = r.Clone(r.Context())
				r.URL.Path = server.MetadataPath
			}
		}
		unknown.ServeHTTP(w, r)
	})
	m.handler = httpguard.Guards(g.health)(route)
	return m, nil
}

// build checks servers and builds a Server for each, but for those whose
// entry equals that of keep (kept as they are, absent from the result).
// On error it closes those it built.
func (m *Multi) build(servers []MultiServer, keep map[string]MultiServer) (map[string]*Server, error) {
	base := m.base
	built := map[string]*Server{}
	seen := map[string]bool{}
	fail := func(err error) (map[string]*Server, error) {
		for _, s := range built {
			s.Close(context.Background())
		}
		return nil, err
	}
	for _, e := range servers {
		if err := CheckServerName(e.Name); err != nil {
			return fail(fmt.Errorf("serve: %w", err))
		}
		if seen[e.Name] {
			return fail(fmt.Errorf("serve: server %q is named twice", e.Name))
		}
		seen[e.Name] = true
		if base.HealthPath != "" && strings.HasPrefix(base.HealthPath, "/"+e.Name+"/") {
			return fail(fmt.Errorf("serve: health path %q is under server %q's paths; choose another", base.HealthPath, e.Name))
		}
		if k, ok := keep[e.Name]; ok && sameEntry(k, e) {
			continue
		}
		cfg := base
		cfg.Name, cfg.Command = e.Name, e.Command
		cfg.Env = slices.Concat(base.Env, e.Env)
		if e.Dir != "" {
			cfg.Dir = e.Dir
		}
		cfg.Path = "/" + e.Name + base.Path
		cfg.SSEPath = "/" + e.Name + base.SSEPath
		cfg.MessagePath = "/" + e.Name + base.MessagePath
		cfg.HealthPath = "" // answered in front of them all
		s, err := NewServer(cfg)
		if err != nil {
			return fail(fmt.Errorf("server %q: %w", e.Name, err))
		}
		built[e.Name] = s
	}
	return built, nil
}

// sameEntry reports whether a and b describe the same server.
func sameEntry(a, b MultiServer) bool {
	return a.Name == b.Name && slices.Equal(a.Command, b.Command) && slices.Equal(a.Env, b.Env) && a.Dir == b.Dir
}

// Reload makes servers the servers published, as a new reading of the
// configuration: a server whose entry is unchanged is left as it is, its
// sessions and children untouched; a new one is added; one changed is
// replaced, and one gone removed — each old one drained and closed (see
// [Server.Drain], [Server.Close]) once requests for its name reach the
// new one or get 404 (an old server's children still running at the
// end of ctx are killed, and said so in the log). Nothing changes when
// servers are refused: the error names the server. It returns the names
// added, removed and changed, once the old servers are closed.
func (m *Multi) Reload(ctx context.Context, servers []MultiServer) (added, removed, changed []string, err error) {
	if len(servers) == 0 {
		return nil, nil, nil, errors.New("serve: no servers")
	}
	m.reload.Lock()
	defer m.reload.Unlock()
	m.mu.RLock()
	keep := maps.Clone(m.entries)
	m.mu.RUnlock()
	built, err := m.build(servers, keep)
	if err != nil {
		return nil, nil, nil, err
	}
	var old []*Server
	m.mu.Lock()
	next := map[string]*Server{}
	entries := map[string]MultiServer{}
	var names []string
	for _, e := range servers {
		names = append(names, e.Name)
		entries[e.Name] = e
		if s := built[e.Name]; s != nil {
			next[e.Name] = s
			if prev := m.servers[e.Name]; prev != nil {
				changed = append(changed, e.Name)
				old = append(old, prev)
			} else {
				added = append(added, e.Name)
			}
			continue
		}
		next[e.Name] = m.servers[e.Name]
	}
	for _, n := range m.names {
		if _, ok := next[n]; !ok {
			removed = append(removed, n)
			old = append(old, m.servers[n])
		}
	}
	m.names, m.servers, m.entries = names, next, entries
	m.mu.Unlock()
	errs := make([]error, len(old))
	var wg sync.WaitGroup
	for i, s := range old {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Drain(ctx)
			errs[i] = s.Close(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		m.base.Logger.Warn("processes of the servers removed or changed still running at the deadline were killed", "err", err)
	}
	return added, removed, changed, nil
}

// multiOAuthRoutes checks base.OAuth for NewMulti and returns the routes
// served beside the servers: the resource's metadata and the Routes.
func multiOAuthRoutes(base ServeConfig) (map[string]http.Handler, error) {
	o := base.OAuth
	if o == nil {
		return nil, nil
	}
	if o.Resource != nil && !slices.Equal(o.Resource.MetadataPaths(), []string{server.MetadataPath}) {
		return nil, errors.New("serve: with several servers the protected resource is the listener's: its path must be /")
	}
	cfg := base
	cfg.Path, cfg.HealthPath = "/", ""
	return oauthRoutes(cfg, nil)
}

// serverOf returns the first segment of path, "" when there is none
// followed by a '/'.
func serverOf(path string) string {
	rest, ok := strings.CutPrefix(path, "/")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	return name
}

// noServer answers a request for a path under no server: 404, with a
// JSON-RPC error (id null) that names none.
func noServer(w http.ResponseWriter, _ *http.Request) {
	b := frame.ErrorResponse("", -32600, "no MCP server is published at this path: the endpoints are /NAME/mcp, NAME one of serve's --config").Bytes()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(b)
}

// Names returns the servers' names, in the order given.
func (m *Multi) Names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.names)
}

// Server returns the server named name, or nil.
func (m *Multi) Server(name string) *Server {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.servers[name]
}

// current returns the servers published, in order.
func (m *Multi) current() []*Server {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Server, len(m.names))
	for i, n := range m.names {
		out[i] = m.servers[n]
	}
	return out
}

// Handler returns the HTTP handler of all the servers.
func (m *Multi) Handler() http.Handler { return m.handler }

// Ready returns nil when every server is ready (see [Server.Ready]), else
// why the first that is not is not, naming it.
func (m *Multi) Ready() error {
	return m.readyWith(func(s *Server, _ context.Context) error { return s.Ready() }, context.Background())
}

func (m *Multi) readyWith(ready func(*Server, context.Context) error, ctx context.Context) error {
	for _, s := range m.current() {
		if err := ready(s, ctx); err != nil {
			return fmt.Errorf("server %s: %w", s.cfg.Name, err)
		}
	}
	return nil
}

// AdminHandler returns the handler of the admin listener for all the
// servers, as [Server.AdminHandler] answers for one: /readyz is 200 when
// every server is ready, else 503 naming the first that is not; /metrics
// holds every server's series, each with its server label.
func (m *Multi) AdminHandler() http.Handler {
	return adminHandler(
		func(ctx context.Context) error { return m.readyWith((*Server).readyWait, ctx) },
		func(w io.Writer) {
			var ms []*serveMetrics
			for _, s := range m.current() {
				ms = append(ms, s.metrics)
			}
			writePrometheus(w, ms...)
		},
	)
}

// Drain drains every server at once (see [Server.Drain]).
func (m *Multi) Drain(ctx context.Context) error {
	return m.each(func(s *Server) error { return s.Drain(ctx) })
}

// Close closes every server at once (see [Server.Close]), once a Reload
// under way is over.
func (m *Multi) Close(ctx context.Context) error {
	m.reload.Lock()
	defer m.reload.Unlock()
	return m.each(func(s *Server) error { return s.Close(ctx) })
}

// each runs f on every server, concurrently, and joins their errors.
func (m *Multi) each(f func(*Server) error) error {
	servers := m.current()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(s)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
