package transport

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"
)

// record returns a stderrRecord holding text, written as a child would.
func record(text string) *stderrRecord {
	r := &stderrRecord{}
	for line := range strings.Lines(text) {
		r.add([]byte(line))
	}
	return r
}

// Node's report of a missing script ends with its version: the excerpt
// shows the error and the lines around it, not that last line alone.
func TestStderrExcerptShowsTheFirstError(t *testing.T) {
	is := is.New(t)
	r := record("node:internal/modules/cjs/loader:1228\n" +
		"  throw err;\n" +
		"  ^\n" +
		"\n" +
		"Error: Cannot find module '/missing.js'\n" +
		"    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)\n" +
		"    at node:internal/main/run_main_module:28:49 {\n" +
		"  code: 'MODULE_NOT_FOUND',\n" +
		"  requireStack: []\n" +
		"}\n" +
		"\n" +
		"Node.js v20.20.2\n")
	is.Equal(r.excerpt(StderrExcerptMax), "throw err;\n"+
		"^\n"+
		"Error: Cannot find module '/missing.js'\n"+
		"at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)\n"+
		"at node:internal/main/run_main_module:28:49 {\n"+
		"code: 'MODULE_NOT_FOUND',\n"+
		"requireStack: []\n"+
		"}\n"+
		"Node.js v20.20.2")
}

// A traceback longer than the excerpt keeps its start and its last line,
// which names the cause.
func TestStderrExcerptKeepsTheLastLineOfALongReport(t *testing.T) {
	is := is.New(t)
	var b strings.Builder
	b.WriteString("INFO starting\nTraceback (most recent call last):\n")
	for range 60 {
		b.WriteString(`  File "/srv/app/module.py", line 12, in <module>` + "\n")
	}
	b.WriteString("ModuleNotFoundError: No module named 'mcp'\n")
	got := record(b.String()).excerpt(StderrExcerptMax)
	is.True(len(got) <= StderrExcerptMax)
	is.True(strings.HasPrefix(got, "INFO starting\nTraceback (most recent call last):\nFile "))
	is.True(strings.HasSuffix(got, "\n…\nModuleNotFoundError: No module named 'mcp'"))
}

// With nothing that looks like an error, the excerpt is the last lines
// that fit; bytes that are not UTF-8 and control characters are replaced;
// a long line is cut on a character boundary.
func TestStderrExcerptWithoutAnErrorLine(t *testing.T) {
	is := is.New(t)
	is.Equal(record("one\ntwo\x1b[0m\tthree\xff\n").excerpt(StderrExcerptMax), "one\ntwo [0m three\uFFFD")
	is.Equal(record("").excerpt(StderrExcerptMax), "")

	long := strings.Repeat("é", 3000) // 6000 bytes
	got := record(long + "\nlast\n").excerpt(StderrExcerptMax)
	is.True(utf8.ValidString(got))
	is.True(strings.HasSuffix(got, "…\nlast"))
	is.Equal(len(strings.Split(got, "\n")[0]), stderrLineKept-1) // cut before a split character, "…" counted

	only := record(long).excerpt(10)
	is.True(utf8.ValidString(only))
	is.True(len(only) <= 10)
}

// Only the latest 8 KiB are kept.
func TestStderrRecordIsBounded(t *testing.T) {
	is := is.New(t)
	r := &stderrRecord{}
	for range 1000 {
		r.add([]byte(strings.Repeat("a", 100) + "\n"))
	}
	is.True(r.size <= stderrKept)
	is.Equal(len(r.lines), stderrKept/100)
}
