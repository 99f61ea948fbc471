package auth

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// portOwner names the process listening on TCP port (as "pid 1234
// (name)"), or returns "" when it cannot tell: the socket's inode comes
// from /proc/net/tcp and tcp6, the process from the /proc/PID/fd links
// that point at it (only this user's processes can be read).
func portOwner(port int) string {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listeningInodes(table, port, inodes)
	}
	if len(inodes) == 0 {
		return ""
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return ""
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
				if name := strings.TrimSpace(string(comm)); name != "" {
					return fmt.Sprintf("pid %d (%s)", pid, name)
				}
				return fmt.Sprintf("pid %d", pid)
			}
		}
	}
	return ""
}

// listeningInodes adds to inodes the socket inodes of table's entries in
// state LISTEN on port.
func listeningInodes(table string, port int, inodes map[string]bool) {
	f, err := os.Open(table)
	if err != nil {
		return
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	sc.Scan() // the header line
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || !strings.HasSuffix(fields[1], want) || fields[3] != "0A" {
			continue
		}
		inodes[fields[9]] = true
	}
}
