package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

func TestParseServersConfig(t *testing.T) {
	is := is.New(t)
	whole := `{"globalShortcut":"", "mcpServers": {
		"notes": {"command": "node", "args": ["notes.js", "--x"], "env": {"B": "2", "A": "1"}, "cwd": "srv"},
		"files": {"command": "/bin/files", "type": "stdio"}
	}}`
	got, err := parseServersConfig([]byte(whole), "/etc/cfg")
	is.NoErr(err)
	is.Equal(got, []pipeline.MultiServer{
		{Name: "files", Command: []string{"/bin/files"}},
		{Name: "notes", Command: []string{"node", "notes.js", "--x"}, Env: []string{"A=1", "B=2"}, Dir: filepath.Join("/etc/cfg", "srv")},
	})
	bare, err := parseServersConfig([]byte(`{"one": {"command": "x", "cwd": "/abs"}}`), "/etc")
	is.NoErr(err)
	is.Equal(bare, []pipeline.MultiServer{{Name: "one", Command: []string{"x"}, Dir: "/abs"}})

	for _, tt := range []struct{ in, want string }{
		{`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `duplicate member "mcpServers.a"`},
		{`{"a": {"command": "x", "command": "y"}}`, `duplicate member "a.command"`},
		{`{"remote": {"url": "https://example.com/mcp"}}`, `server "remote": has a url`},
		{`{"s": {"type": "sse", "command": "x"}}`, `server "s": has type "sse"`},
		{`{"nocmd": {"args": ["a"]}}`, `server "nocmd": has no command`},
		{`{"empty": {"command": ""}}`, `server "empty": has no command`},
		{`{"a/b": {"command": "x"}}`, `server "a/b": server name "a/b" may hold only`},
		{`{".well-known": {"command": "x"}}`, `must not begin with '.'`},
		{`{"n": {"command": "x", "args": "a b"}}`, `server "n": args must be an array of strings`},
		{`{"n": {"command": "x", "env": {"K": 1}}}`, `server "n": env must be an object of strings`},
		{`{"n": {"command": ["x"]}}`, `server "n": command must be a string`},
		{`{"n": {"command": "x", "env": {"A=B": "1"}}}`, `server "n": env "A=B"`},
		{`{"n": "x"}`, `server "n": want an object`},
		{`{"mcpServers": []}`, `mcpServers must be an object`},
		{`{"mcpServers": {}}`, `no servers`},
		{`{}`, `no servers`},
		{`[]`, `want a JSON object`},
		{`{"a":`, `not valid JSON`},
	} {
		_, err := parseServersConfig([]byte(tt.in), "/")
		is.True(err != nil)                             // tt.in
		is.True(strings.Contains(err.Error(), tt.want)) // tt.want
	}
}

func TestReadServersConfigAndCheckServers(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	exe, err := os.Executable() // a program that runs
	is.NoErr(err)
	exeJSON, _ := json.Marshal(exe)
	path := filepath.Join(dir, "claude_desktop_config.json")
	is.NoErr(os.WriteFile(path, []byte(`{"mcpServers": {"ok": {"command": `+string(exeJSON)+`}, "gone": {"command": "/no/such/program"}}}`), 0o600))
	servers, err := readServersConfig(path)
	is.NoErr(err)
	err = checkServers(servers)
	is.True(err != nil && strings.Contains(err.Error(), `server "gone": cannot run`))
	_, err = readServersConfig(filepath.Join(dir, "missing.json"))
	is.True(err != nil && strings.HasPrefix(err.Error(), "--config: "))
	servers, err = parseServersConfig([]byte(`{"c": {"command": `+string(exeJSON)+`, "cwd": "nodir"}}`), dir)
	is.NoErr(err)
	err = checkServers(servers)
	is.True(err != nil && strings.Contains(err.Error(), `server "c": cwd`))
}

// FuzzParseServersConfig: whatever the file holds, parsing ends with
// servers that pass the checks NewMulti makes, or an error.
func FuzzParseServersConfig(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"V"},"cwd":"d"}}}`,
		`{"a":{"command":"x"},"b":{"url":"https://example.com"}}`,
		`{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}}}`,
		`{"mcpServers":[]}`,
		`{"a/b":{"command":"x"}}`,
		`{"a":{"command":"x","env":{"=":"1"}}}`,
		`[[[[`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		servers, err := parseServersConfig(b, "/base")
		if err != nil {
			return
		}
		if len(servers) == 0 {
			t.Fatal("no servers and no error")
		}
		for _, s := range servers {
			if pipeline.CheckServerName(s.Name) != nil || len(s.Command) == 0 || s.Command[0] == "" {
				t.Fatalf("accepted %+v", s)
			}
			if s.Dir != "" && !filepath.IsAbs(s.Dir) {
				t.Fatalf("relative dir %q", s.Dir)
			}
			for _, kv := range s.Env {
				if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
					t.Fatalf("bad env %q", kv)
				}
			}
		}
	})
}
