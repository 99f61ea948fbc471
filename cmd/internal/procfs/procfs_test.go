package procfs

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// statLine builds a stat line as Linux writes it, for a process named comm.
func statLine(pid int, comm string, state byte, ppid, pgrp int, utime, stime int64, start string) string {
	f := make([]string, 0, 52)
	f = append(f, string(state), fmt.Sprint(ppid), fmt.Sprint(pgrp))
	for len(f) < 11 {
		f = append(f, "0")
	}
	f = append(f, fmt.Sprint(utime), fmt.Sprint(stime))
	for len(f) < 19 {
		f = append(f, "0")
	}
	f = append(f, start)
	for len(f) < 52 {
		f = append(f, "0")
	}
	return fmt.Sprintf("%d (%s) %s\n", pid, comm, strings.Join(f, " "))
}

func TestParseStat(t *testing.T) {
	is := is.New(t)
	for _, comm := range []string{"sleep", "a b", "x) Z 1 2 (", "))", ""} {
		s, err := ParseStat([]byte(statLine(42, comm, 'S', 7, 9, 250, 130, "123456")))
		is.NoErr(err)
		is.Equal(s, Stat{State: 'S', PPID: 7, PGRP: 9, UTime: 250, STime: 130, Start: "123456"}) // whatever the name holds
		is.Equal(s.CPU(), 3800*time.Millisecond)
	}
	for _, bad := range []string{"", "42 sleep S 1", strings.Replace(statLine(1, "x", 'S', 1, 1, 0, 0, "1"), " S ", " \xe3 ", 1), "42 (sleep) S 1 2", statLine(1, "x", 'S', 1, 1, 0, 0, "1")[:30],
		strings.Replace(statLine(1, "x", 'S', 1, 1, 0, 0, "1"), " S ", " SS ", 1)} {
		_, err := ParseStat([]byte(bad))
		is.True(err != nil) // refused, not misread
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte(statLine(42, "sleep", 'S', 7, 9, 250, 130, "123456")))
	f.Add([]byte(statLine(1, "x) Z 1 2 (", 'Z', 0, 0, 0, 0, "0")))
	f.Add([]byte("1 (a) R"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStat(b)
		if err != nil {
			return
		}
		// What was read is what the line says after the name's last ')'.
		rest := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if string([]byte{s.State}) != rest[0] || s.Start != rest[19] {
			t.Fatalf("ParseStat(%q) = %+v", b, s)
		}
	})
}

// The live reads, on this process and a child of its own.
func TestLive(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	is := is.New(t)
	self, err := ReadStat(os.Getpid())
	is.NoErr(err)
	is.Equal(self.PPID, os.Getppid())
	is.True(strings.IndexByte("RSD", self.State) >= 0) // alive: its main thread runs or waits (another may be the one reading)
	rss, err := StatusKB(os.Getpid(), "VmRSS")
	is.NoErr(err)
	is.True(rss > 0)
	_, err = StatusKB(os.Getpid(), "NoSuchField")
	is.True(err != nil)
	threads, err := StatusCount(os.Getpid(), "Threads")
	is.NoErr(err)
	is.True(threads > 0)
	n, err := FDs(os.Getpid())
	is.NoErr(err)
	is.True(n > 2)

	cmd := exec.Command("sleep", "300")
	is.NoErr(cmd.Start())
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	is.True(slices.Contains(Children(os.Getpid()), pid))
	line, err := Cmdline(pid)
	is.NoErr(err)
	is.Equal(line, "sleep 300")
	kid, err := ReadStat(pid)
	is.NoErr(err)
	is.Equal(kid.PPID, os.Getpid())
	is.True(kid.Start != "")

	is.NoErr(cmd.Process.Kill())
	_ = cmd.Wait()
	_, err = ReadStat(pid)
	is.True(err != nil) // ended and reaped
	is.True(!slices.Contains(Children(os.Getpid()), pid))
}
