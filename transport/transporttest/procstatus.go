package transporttest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcStatusKB returns a "Name: N kB" field of /proc/<pid>/status —
// VmRSS, RssAnon, RssFile, VmHWM and the like — in kB. It fails where
// there is no /proc (any system but Linux).
func ProcStatusKB(pid int, name string) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", name, pid)
}
