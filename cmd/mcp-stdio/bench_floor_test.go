package main_test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
)

// BenchmarkIdleRSSFloor measures the idle memory of testdata/rssfloor, a
// Go HTTP server that answers every POST with a canned result and does
// nothing else, after as many requests as BenchmarkServeModernIdleRSS
// makes: the floor any Go gateway process reaches on this machine, beside
// which serve's idle figure is read (BENCHMARKS.md, "serve at
// 2026-07-28").
func BenchmarkIdleRSSFloor(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	bin := filepath.Join(b.TempDir(), "rssfloor")
	build := exec.Command("go", "build", "-o", bin, "./testdata/rssfloor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as mcp-stdio is released
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the floor: %v\n%s", err, out)
	}
	served := regexp.MustCompile(`serving at (http://\S+)`)
	var sums [3]float64
	n := 0
	for b.Loop() {
		cmd := exec.Command(bin)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(stderr).ReadString('\n')
		m := served.FindStringSubmatch(line)
		if err != nil || m == nil {
			b.Fatalf("the floor did not start: %q %v", line, err)
		}
		// initialize, initialized, tools/list and the calls, as serve gets.
		for range 3 + serveIdleCalls {
			resp, err := http.Post(m[1], "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+serveBenchText+`"}}}`))
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
		// Not synchronisation: the measurement is "RSS after a second
		// with nothing to do".
		time.Sleep(relayIdleWait)
		for i, field := range []string{"VmRSS", "RssAnon", "RssFile"} {
			kb, err := procfs.StatusKB(cmd.Process.Pid, field)
			if err != nil {
				b.Fatal(err)
			}
			sums[i] += float64(kb)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		n++
	}
	b.ReportMetric(sums[0]/float64(n)/1024, "floor-idle-RSS-MiB")
	b.ReportMetric(sums[1]/float64(n)/1024, "floor-idle-RssAnon-MiB")
	b.ReportMetric(sums[2]/float64(n)/1024, "floor-idle-RssFile-MiB")
}
