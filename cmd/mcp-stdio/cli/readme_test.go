package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every serve example in the README that sets no token listens on
// loopback: a reader who pastes one does not publish a server to the
// network by accident (issue 10).
func TestREADMEServeExamplesAreSafe(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	listen := regexp.MustCompile(`--listen[ =](\S+)`)
	examples := 0
	inCode := false
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode || !strings.Contains(line, "mcp-stdio serve") || strings.HasPrefix(strings.TrimSpace(line), "mcp-stdio: serving") {
			continue
		}
		examples++
		if strings.Contains(line, "MCP_STDIO_SERVE_TOKEN=") {
			continue
		}
		if m := listen.FindStringSubmatch(line); m != nil && !isLoopbackListener(m[1]) {
			t.Errorf("README example listens beyond loopback without a token: %s", strings.TrimSpace(line))
		}
	}
	if examples == 0 {
		t.Fatal("no serve example found in the README")
	}
}
