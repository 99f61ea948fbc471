//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Figures of a process, read from /proc (Linux only).

// rssKiB returns the resident set size of pid in KiB (VmRSS).
func rssKiB(pid int) int64 { return statusField(pid, "VmRSS:") }

// threads returns the number of threads of pid.
func threads(pid int) int64 { return statusField(pid, "Threads:") }

func statusField(pid int, name string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return -1
}

// fds returns the number of open file descriptors of pid.
func fds(pid int) int64 {
	es, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return -1
	}
	return int64(len(es))
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
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out[pid] = p
		}
	}
	return out
}

func readProc(pid int) (proc, bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid ... : comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
	return proc{pid: pid, ppid: ppid, start: f[19], cmdline: strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))}, true
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
	now, ok := readProc(p.pid)
	if !ok || now.start != p.start {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || len(stat) < i+3 || stat[i+2] != 'Z'
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
