package cli

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// parentPollInterval is how often a parent is looked at where the system
// cannot tell its death (see watchParent).
const parentPollInterval = time.Second

// endWithParent returns ctx, ended (as a SIGTERM ends serve: a drain, then
// the exit) once the process named by pipeline.ParentPIDEnv — serve's parent — has
// died; ctx itself when the variable is not set. On Linux the kernel sends
// serve SIGTERM when its parent dies (a parent-death signal, which main
// turns into the end of ctx); elsewhere the parent is watched. A parent
// already gone when serve starts ends it at once; a variable that names a
// process that is not serve's parent (inherited by mistake) is ignored
// with a warning. stop releases what the watch holds.
func endWithParent(ctx context.Context, getenv func(string) string, log *slog.Logger) (_ context.Context, stop func()) {
	v := getenv(pipeline.ParentPIDEnv)
	if v == "" {
		return ctx, func() {}
	}
	pid, err := strconv.Atoi(v)
	if err != nil || pid <= 1 {
		log.Warn("ignoring "+pipeline.ParentPIDEnv+": not a process id", "value", v)
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	gone := func() {
		log.Info("the parent process that started serve is gone: draining, then exiting", "parent", pid)
		cancel()
	}
	stopWatch, err := watchParent(pid, gone)
	if err != nil {
		log.Warn("serve will not end with its parent: "+err.Error(), "parent", pid)
	}
	return ctx, func() { stopWatch(); cancel() }
}
