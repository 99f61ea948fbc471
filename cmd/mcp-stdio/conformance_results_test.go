package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/internal/conformancereport"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// confCheck is one check of a scenario, as the suite writes it to
// <results>/<scenario>-<timestamp>/checks.json.
type confCheck struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, SKIPPED
	ErrorMessage string `json:"errorMessage"`
}

// confResultDir matches a result directory's trailing timestamp,
// "-2026-11-30T19-43-30-091Z".
var confResultDir = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// confReadResults reads every checks.json under dir, keyed by scenario
// name: the directory's path below dir without its timestamp and without
// prefix ("server-" in server mode; client scenarios such as
// "auth/scope-step-up" keep their slash as a directory level).
func confReadResults(dir, prefix string) (map[string][]confCheck, error) {
	res := map[string][]confCheck{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(confResultDir.ReplaceAllString(filepath.ToSlash(rel), ""), prefix)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []confCheck
		if err := json.Unmarshal(b, &checks); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		res[name] = checks
		return nil
	})
	return res, err
}

// confScore fills a scenario's counts from its checks and notes the
// checks that failed or warned. It does not set Passed.
func confScore(s *conformancereport.Scenario, checks []confCheck) {
	var notes []string
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			s.Success++
		case "FAILURE":
			s.Failure++
			notes = append(notes, "FAILURE "+confDescribe(c))
		case "WARNING":
			s.Warning++
			notes = append(notes, "WARNING "+confDescribe(c))
		}
	}
	s.Notes = confJoinNotes(s.Notes, strings.Join(notes, "\n"))
}

// confDescribe names a check and says what went wrong.
func confDescribe(c confCheck) string {
	msg := c.ErrorMessage
	if msg == "" {
		msg = c.Description
	}
	const limit = 300
	if len(msg) > limit {
		msg = msg[:limit] + "…"
	}
	return fmt.Sprintf("`%s`: %s", c.ID, msg)
}

func confJoinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// confListed is a scenario as `conformance list` prints it.
type confListed struct {
	name     string
	versions []string // spec versions it applies to; "extension" for extensions
}

// confParseList parses `conformance list` output: sections headed
// "<Kind> scenarios (...):" with lines "  - name [v1,v2]".
func confParseList(out []byte) map[string][]confListed {
	sections := map[string][]confListed{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if kind, _, ok := strings.Cut(line, " scenarios ("); ok && !strings.HasPrefix(line, " ") {
			section = strings.ToLower(kind)
			continue
		}
		item, ok := strings.CutPrefix(line, "  - ")
		if !ok || section == "" {
			continue
		}
		l := confListed{name: item}
		if name, vs, ok := strings.Cut(item, " ["); ok {
			l.name = name
			l.versions = strings.Split(strings.TrimSuffix(vs, "]"), ",")
		}
		sections[section] = append(sections[section], l)
	}
	return sections
}

// confLog is the output of a process the conformance test or a benchmark
// runs, kept to be quoted when something fails.
type confLog struct{ transporttest.SyncBuffer }

// tail returns the last n lines written.
func (l *confLog) tail(n int) string {
	lines := strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
	if len(lines) > n {
		lines = slices.Concat([]string{fmt.Sprintf("[… %d lines]", len(lines)-n)}, lines[len(lines)-n:])
	}
	return strings.Join(lines, "\n")
}
