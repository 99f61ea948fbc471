package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// maxServersConfig bounds what --config reads: 1 MiB, far more than any
// list of servers.
const maxServersConfig = 1 << 20

// readServersConfig reads serve's --config FILE (see parseServersConfig);
// a relative cwd is taken from FILE's directory. Errors name the file.
func readServersConfig(path string) ([]pipeline.MultiServer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxServersConfig+1))
	if err != nil {
		return nil, fmt.Errorf("--config: %v", err)
	}
	if len(b) > maxServersConfig {
		return nil, fmt.Errorf("--config %s is larger than %d bytes", path, maxServersConfig)
	}
	servers, err := parseServersConfig(b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("--config %s: %v", path, err)
	}
	return servers, nil
}

// serverEntry is one entry of mcpServers, as Claude Desktop writes it.
type serverEntry struct {
	Command *string           `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     *string           `json:"url"`
	Type    string            `json:"type"`
}

// parseServersConfig parses Claude Desktop's configuration: the whole
// file, {"mcpServers": {NAME: ENTRY, …}, …} (its other members ignored),
// or the mcpServers object alone — a document with a member mcpServers is
// taken as the whole file. An ENTRY is {"command": …, "args": [...],
// "env": {…}, "cwd": …}; other members are ignored but "url" (a remote
// server, refused) and a "type" other than "stdio". dir is where a
// relative cwd is taken from. The servers come sorted by name; errors name
// the entry.
func parseServersConfig(b []byte, dir string) ([]pipeline.MultiServer, error) {
	if err := frame.CheckUnique(b); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, errors.New("want a JSON object: Claude Desktop's configuration, {\"mcpServers\": {...}}, or its mcpServers object")
	}
	if raw, ok := top["mcpServers"]; ok {
		top = nil
		if err := json.Unmarshal(raw, &top); err != nil || top == nil {
			return nil, errors.New("mcpServers must be an object of servers by name")
		}
	}
	if len(top) == 0 {
		return nil, errors.New("no servers: add entries to mcpServers")
	}
	var servers []pipeline.MultiServer
	for _, name := range slices.Sorted(maps.Keys(top)) {
		s, err := parseServerEntry(name, top[name], dir)
		if err != nil {
			return nil, fmt.Errorf("server %q: %v", name, err)
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// parseServerEntry parses the entry of server name.
func parseServerEntry(name string, raw json.RawMessage, dir string) (pipeline.MultiServer, error) {
	s := pipeline.MultiServer{Name: name}
	if err := pipeline.CheckServerName(name); err != nil {
		return s, fmt.Errorf("%v; rename the entry", err)
	}
	var e serverEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return s, fmt.Errorf("%s must be %s", te.Field, entryFieldWant(te.Field))
		}
		return s, errors.New("want an object with command, args, env and cwd")
	}
	switch {
	case e.URL != nil:
		return s, fmt.Errorf("has a url: serve publishes stdio servers (command, args); reach %s directly, or through mcp-stdio's relay", *e.URL)
	case e.Type != "" && e.Type != "stdio":
		return s, fmt.Errorf("has type %q: serve publishes stdio servers only", e.Type)
	case e.Command == nil || *e.Command == "":
		return s, errors.New("has no command: give the server's program in \"command\"")
	}
	s.Command = append([]string{*e.Command}, e.Args...)
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(e.Env[k], 0) {
			return s, fmt.Errorf("env %q: a variable's name must be non-empty without '=' or NUL, its value without NUL", k)
		}
		s.Env = append(s.Env, k+"="+e.Env[k])
	}
	if e.Cwd != "" {
		s.Dir = e.Cwd
		if !filepath.IsAbs(s.Dir) {
			s.Dir = filepath.Join(dir, s.Dir)
		}
	}
	return s, nil
}

// entryFieldWant says what an entry's member must be.
func entryFieldWant(field string) string {
	switch {
	case field == "args" || strings.HasPrefix(field, "args."):
		return "an array of strings"
	case field == "env" || strings.HasPrefix(field, "env."):
		return "an object of strings"
	}
	return "a string"
}

// serversConfig reads --config, which excludes a server command (args).
func (f *serveFlags) serversConfig(args []string) ([]pipeline.MultiServer, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("--config and a server command (-- %s) exclude each other: put the command in the file's mcpServers, or drop --config", shellQuote(args))
	}
	return readServersConfig(f.configFile)
}

// watchReload has reload run at every SIGHUP the process gets, one at a
// time, until the returned stop is called; stop waits for a reload under
// way. It is for a process of its own (Options.OwnProcess) only.
func watchReload(reload func()) (stop func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-c:
				reload()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(c)
		close(done)
		<-ended
	}
}

// reloadServers reads --config again and makes m serve what it says (see
// pipeline.Multi.Reload); published is told each server added or
// changed. A file that is refused changes nothing, and says so in one
// line.
func (f *serveFlags) reloadServers(ctx context.Context, m *pipeline.Multi, published func(name string, command []string), logger *slog.Logger) {
	servers, err := readServersConfig(f.configFile)
	if err == nil {
		err = checkServers(servers)
	}
	var added, removed, changed []string
	if err == nil {
		added, removed, changed, err = m.Reload(ctx, servers)
	}
	if err != nil && !strings.HasPrefix(err.Error(), "--config") {
		err = fmt.Errorf("--config %s: %w", f.configFile, err)
	}
	if err != nil {
		logger.Error("--config not reloaded, the servers are unchanged: " + err.Error() + "; fix the file and send SIGHUP again")
		return
	}
	logger.Info("--config reloaded", "file", f.configFile, "added", added, "removed", removed, "changed", changed)
	for _, s := range servers {
		if slices.Contains(added, s.Name) || slices.Contains(changed, s.Name) {
			published(s.Name, s.Command)
		}
	}
}

// servePipeline is what the serve command serves: one pipeline.Server,
// or a pipeline.Multi of those of --config.
type servePipeline interface {
	Handler() http.Handler
	AdminHandler() http.Handler
	Drain(context.Context) error
	Close(context.Context) error
}

// newServePipeline builds the server of cfg, or with --config one per
// entry of servers from cfg.
func newServePipeline(cfg pipeline.ServeConfig, servers []pipeline.MultiServer) (servePipeline, error) {
	if servers != nil {
		m, err := pipeline.NewMulti(cfg, servers)
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	s, err := pipeline.NewServer(cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// checkServers checks what can be checked of each server before serving:
// its working directory exists, its command can run. Errors name the
// server.
func checkServers(servers []pipeline.MultiServer) error {
	for _, s := range servers {
		if s.Dir != "" {
			st, err := os.Stat(s.Dir)
			if err != nil || !st.IsDir() {
				return fmt.Errorf("server %q: cwd %s is not a directory", s.Name, s.Dir)
			}
		}
		command := s.Command
		if s.Dir != "" && strings.ContainsRune(command[0], filepath.Separator) && !filepath.IsAbs(command[0]) {
			command = slices.Concat([]string{filepath.Join(s.Dir, command[0])}, command[1:])
		}
		if err := checkCommand(command); err != nil {
			return fmt.Errorf("server %q: %v", s.Name, err)
		}
	}
	return nil
}
