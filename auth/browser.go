package auth

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
)

// openBrowser opens u in the user's browser. $BROWSER (read through getenv)
// wins when set: it is a list of commands separated like PATH, each a
// command line split on spaces, tried in order until one starts; "%s" in a
// command is replaced by the URL, else the URL is appended as the last
// argument (no shell is involved). Without $BROWSER it runs the platform's
// opener: xdg-open, open (macOS) or rundll32 (Windows).
//
// It returns once the command has started and does not wait for it (a
// browser may run for hours); a goroutine, counted in launchers, reaps the
// process when it exits.
func openBrowser(getenv func(string) string, u string, launchers *sync.WaitGroup) error {
	var cmds [][]string
	if b := getenv("BROWSER"); strings.TrimSpace(b) != "" {
		for _, entry := range strings.Split(b, string(os.PathListSeparator)) {
			f := strings.Fields(entry)
			if len(f) == 0 {
				continue
			}
			replaced := false
			for i, a := range f {
				if strings.Contains(a, "%s") {
					f[i] = strings.ReplaceAll(a, "%s", u)
					replaced = true
				}
			}
			if !replaced {
				f = append(f, u)
			}
			cmds = append(cmds, f)
		}
	} else {
		switch runtime.GOOS {
		case "darwin":
			cmds = [][]string{{"open", u}}
		case "windows":
			cmds = [][]string{{"rundll32", "url.dll,FileProtocolHandler", u}}
		default:
			cmds = [][]string{{"xdg-open", u}}
		}
	}
	var errs []error
	for _, argv := range cmds {
		cmd := exec.Command(argv[0], argv[1:]...)
		if err := cmd.Start(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", argv[0], unwrapExecError(err)))
			continue
		}
		launchers.Go(func() { _ = cmd.Wait() }) // reap; ends when the launcher exits
		return nil
	}
	if len(errs) == 0 {
		return errors.New("no browser command")
	}
	return fmt.Errorf("cannot open a browser: %w", errors.Join(errs...))
}

// unwrapExecError drops the *exec.Error wrapper, whose message repeats the
// command.
func unwrapExecError(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}
