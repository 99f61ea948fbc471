//go:build linux

package main

import (
	"strings"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
)

// Figures of a process, read from /proc (Linux only); -1 when unknown.

// rssKiB returns the resident set size of pid in KiB (VmRSS).
func rssKiB(pid int) int64 { return orUnknown(procfs.StatusKB(pid, "VmRSS")) }

// threads returns the number of threads of pid.
func threads(pid int) int64 { return orUnknown(procfs.StatusCount(pid, "Threads")) }

// fds returns the number of open file descriptors of pid.
func fds(pid int) int64 { return orUnknown(procfs.FDs(pid)) }

func orUnknown(n int, err error) int64 {
	if err != nil {
		return -1
	}
	return int64(n)
}

// proc is one process seen in /proc.
type proc struct {
	pid, ppid int
	start     string // start time in clock ticks since boot: tells a reused pid apart
	cmdline   string
}

// processes lists every process of the machine.
func processes() map[int]proc {
	out := map[int]proc{}
	for _, pid := range procfs.PIDs() {
		if p, ok := readProc(pid); ok {
			out[pid] = p
		}
	}
	return out
}

func readProc(pid int) (proc, bool) {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return proc{}, false
	}
	cmd, _ := procfs.Cmdline(pid)
	return proc{pid: pid, ppid: st.PPID, start: st.Start, cmdline: cmd}, true
}

// descendants lists the processes under pid, at any depth.
func descendants(pid int) []proc {
	all := processes()
	children := map[int][]int{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, all[c])
			queue = append(queue, c)
		}
	}
	return out
}

// alive tells whether p still runs (the same process, not a reused pid)
// and is not a zombie waiting for its parent.
func alive(p proc) bool {
	now, err := procfs.ReadStat(p.pid)
	return err == nil && now.Start == p.start && now.State != 'Z'
}

// servers keeps the MCP server processes of ps: the example servers, not
// the supervisors serve runs them under.
func servers(ps []proc) []proc {
	var out []proc
	for _, p := range ps {
		if strings.Contains(p.cmdline, "example-server") && !strings.Contains(p.cmdline, " supervise") {
			out = append(out, p)
		}
	}
	return out
}
