//go:build linux

package main_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/internal/conformancereport"
)

// TestReplicasConformance runs the official conformance suite's server
// scenarios through each shipped proxy configuration (deploy/haproxy.cfg,
// deploy/nginx.conf) in front of three serve replicas publishing the
// go-sdk v1.8.0 conformance server: every scored scenario passes at
// 2025-11-25 (sessions routed to their replica) and at 2026-07-28 (round
// robin, no affinity: consecutive requests of one client reach different
// replicas). Skipped as TestConformance is.
func TestReplicasConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the official conformance suite (Node.js, npm)")
	}
	if os.Getenv(confSkipEnv) == "1" {
		t.Skipf("%s=1", confSkipEnv)
	}
	suite := confInstall(t)
	bins := confBuild(t)
	rs := startReplicas(t, bins.fixture.childCommand())
	ctx, cancel := context.WithTimeout(context.Background(), confTestTimeout)
	defer cancel()
	for _, rule := range proxyRules {
		if rule.control {
			continue
		}
		t.Run(rule.name, func(t *testing.T) {
			p := rule.start(t, rs)
			for _, spec := range []string{confServerSpec, confModernSpec} {
				t.Run(spec, func(t *testing.T) {
					passed, total := confServerRunAt(t, ctx, suite, p.url+"/mcp", spec)
					t.Logf("through %s to three replicas: %d/%d scored scenarios pass at %s", rule.name, passed, total, spec)
				})
			}
		})
	}
}

// confServerRunAt runs the suite's server scenarios at spec against url
// and fails t unless every scored one passes; it returns the tally.
func confServerRunAt(t *testing.T, ctx context.Context, suite *confSuite, url, spec string) (passed, total int) {
	t.Helper()
	scored, err := confScored(ctx, suite, spec)
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	out := &confLog{}
	rctx, cancel := context.WithTimeout(ctx, confServerRunTimeout+time.Minute)
	defer cancel()
	if _, err := suite.run(rctx, out, "server", "--url", url, "--requirements", spec, "-o", results); err != nil {
		t.Fatalf("the suite did not finish: %v\n%s", err, out.tail(40))
	}
	got, err := confReadResults(results, "server-")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range scored {
		s := conformancereport.Scenario{Name: name, Spec: spec, Scored: true}
		checks, ran := got[name]
		confScore(&s, checks)
		total++
		if ran && s.Failure == 0 {
			passed++
			continue
		}
		if !ran {
			s.Notes = confJoinNotes(s.Notes, "no result: the suite did not run it")
		}
		t.Errorf("server scenario %s at %s failed:\n%s", name, spec, s.Notes)
	}
	if passed != total || total != len(slices.Compact(slices.Sorted(slices.Values(scored)))) {
		t.Errorf("%d/%d scored scenarios pass at %s\n%s", passed, total, spec, out.tail(60))
	}
	return passed, total
}
