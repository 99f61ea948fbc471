package transport

import (
	"regexp"
	"strings"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Bounds of what a [Child] keeps of its stderr for [Child.StderrExcerpt].
const (
	// StderrExcerptMax bounds an excerpt: 2 KiB.
	StderrExcerptMax = 2 << 10
	// stderrKept bounds the lines kept, the latest ones: 8 KiB.
	stderrKept = 8 << 10
	// stderrLineKept bounds one line kept; a longer one is cut.
	stderrLineKept = 1 << 10
	// stderrContext is how many lines before the first error-looking one
	// an excerpt shows.
	stderrContext = 2
)

// errorLooking matches a line that looks like it says what went wrong.
var errorLooking = regexp.MustCompile(`(?i)error|exception|fatal|panic|traceback|cannot|can't|could ?n[o']t|unable to|denied|not found|no such|failed|enoent|eacces|eperm`)

// stderrRecord keeps the latest lines of a child's stderr, each made fit
// to quote (see stderrLine), at most stderrKept bytes of them.
type stderrRecord struct {
	mu    sync.Mutex
	lines []string // oldest first; none blank
	size  int
}

// add records one line (or piece of a long one) of stderr.
func (r *stderrRecord) add(b []byte) {
	line := stderrLine(b)
	if line == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	r.size += len(line)
	for r.size > stderrKept && len(r.lines) > 1 {
		r.size -= len(r.lines[0])
		r.lines[0] = ""
		r.lines = r.lines[1:]
	}
}

// excerpt returns the lines that best explain a failure, at most limit
// bytes of them joined by newlines: from stderrContext lines before the
// first line that looks like an error on, as many as fit — and when not
// all of them fit, "…" and the last line, which often names the cause (a
// Python traceback's does); with no such line, the last lines that fit.
func (r *stderrRecord) excerpt(limit int) string {
	r.mu.Lock()
	lines := append([]string(nil), r.lines...)
	r.mu.Unlock()
	if len(lines) == 0 {
		return ""
	}
	first := -1
	for i, l := range lines {
		if errorLooking.MatchString(l) {
			first = i
			break
		}
	}
	if first < 0 {
		// The last lines that fit.
		total, i := 0, len(lines)
		for i > 0 && total+len(lines[i-1])+1 <= limit+1 {
			i--
			total += len(lines[i]) + 1
		}
		if i == len(lines) {
			return frame.PeerText(lines[len(lines)-1], limit)
		}
		return strings.Join(lines[i:], "\n")
	}
	var out []string
	total := -1 // the separators: one fewer than the lines
	add := func(s string) { out = append(out, s); total += len(s) + 1 }
	fits := func(ss ...string) bool {
		n := total
		for _, s := range ss {
			n += len(s) + 1
		}
		return n <= limit
	}
	for i := max(0, first-stderrContext); i < len(lines); i++ {
		if fits(lines[i]) {
			add(lines[i])
			continue
		}
		last := lines[len(lines)-1]
		for len(out) > 1 && !fits("…", last) {
			total -= len(out[len(out)-1]) + 1
			out = out[:len(out)-1]
		}
		if fits("…") {
			add("…")
		}
		if fits(last) {
			add(last)
		}
		break
	}
	if len(out) == 0 {
		return frame.PeerText(lines[first], limit)
	}
	return strings.Join(out, "\n")
}

// stderrLine makes a line of a child's stderr fit to quote
// ([frame.PeerText]): at most stderrLineKept bytes.
func stderrLine(b []byte) string {
	return frame.PeerText(string(b), stderrLineKept)
}
