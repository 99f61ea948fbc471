// Package procfs reads what Linux's /proc says of a process — its stat
// line, its status fields, its open files, its children — for the load
// and soak tools, tests and benchmarks under cmd. Where there is no /proc
// (any system but Linux), every read fails and every listing is empty.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Stat is what /proc/PID/stat says of a process.
type Stat struct {
	// State is the process state: 'R' running, 'S' sleeping, 'D' in an
	// uninterruptible wait, 'Z' a zombie (ended, not yet reaped), …
	State byte
	// PPID is the parent's pid, PGRP the process group.
	PPID, PGRP int
	// UTime and STime are the CPU time spent in user and kernel mode, in
	// clock ticks (see Stat.CPU).
	UTime, STime int64
	// Start is when the process started, in clock ticks since boot, as
	// written: with the pid it names one process, as a pid may be reused.
	Start string
}

// ticksPerSecond is USER_HZ, the unit of /proc's times: 100 on every
// Linux architecture Go supports.
const ticksPerSecond = 100

// CPU returns the CPU time the process has used, user and kernel mode
// together, to the clock tick (10 ms).
func (s Stat) CPU() time.Duration {
	return time.Duration(s.UTime+s.STime) * (time.Second / ticksPerSecond)
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	s, err := ParseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return s, nil
}

// errBadStat means bytes are not a stat line.
var errBadStat = errors.New("not a stat line")

// ParseStat parses the contents of a /proc/PID/stat file: "pid (comm)
// state ppid pgrp …". The command name may hold spaces and parentheses
// (any process may name itself so), so the fields are read after its last
// ')'.
func ParseStat(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, errBadStat
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 || !isLetter(f[0][0]) {
		return Stat{}, errBadStat
	}
	s := Stat{State: f[0][0], Start: f[19]}
	var errs [4]error
	s.PPID, errs[0] = strconv.Atoi(f[1])
	s.PGRP, errs[1] = strconv.Atoi(f[2])
	s.UTime, errs[2] = strconv.ParseInt(f[11], 10, 64)
	s.STime, errs[3] = strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return Stat{}, fmt.Errorf("%w: %w", errBadStat, err)
	}
	return s, nil
}

// isLetter reports whether c is an ASCII letter, as every process state
// is.
func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// StatusKB returns a "Name: N kB" field of /proc/PID/status (VmRSS,
// RssAnon, RssFile, VmHWM …) in kB.
func StatusKB(pid int, name string) (int, error) {
	v, err := status(pid, name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSuffix(v, " kB"))
}

// StatusCount returns a "Name: N" field of /proc/PID/status that counts
// something (Threads, FDSize …).
func StatusCount(pid int, name string) (int, error) {
	v, err := status(pid, name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// status returns the value of field name of /proc/PID/status, trimmed.
func status(pid int, name string) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no %s in /proc/%d/status", name, pid)
}

// FDs returns how many file descriptors process pid has open.
func FDs(pid int) (int, error) {
	es, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return 0, err
	}
	return len(es), nil
}

// PIDs lists the processes of the machine.
func PIDs() []int {
	es, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range es {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Children lists the processes whose parent is pid; those that end while
// it reads are left out.
func Children(pid int) []int {
	var kids []int
	for _, p := range PIDs() {
		if s, err := ReadStat(p); err == nil && s.PPID == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

// Cmdline returns process pid's command line, its arguments joined with
// spaces.
func Cmdline(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))), nil
}
