package cli

import (
	"context"
	"io"
	"log/slog"

	"github.com/mcp-stdio/mcp-stdio/transport"
)

// SuperviseCommand is the hidden subcommand serve runs each server process
// under, on Linux: the supervisor that ends the server's whole process
// group when the gateway dies (see transport.Supervise).
const SuperviseCommand = "supervise"

// Supervise runs the supervisor of one of serve's server processes:
//
//	mcp-stdio supervise [--path PATH] [--stdin-grace D] [--term-grace D] -- CMD ARGS...
//
// Only serve starts it, with a control socket as descriptor 3. It works on
// the process's own standard descriptors, not the streams given, and ctx
// is not looked at: the signals that end it (SIGTERM, SIGINT) are passed on
// to the server's process group instead. It returns once the server has
// exited, with the server's exit status.
func Supervise(_ context.Context, args []string, getenv func(string) string, _ io.Reader, _, _ io.Writer, opt Options) error {
	if opt.OwnProcess {
		oneThread(getenv) // it only waits
		releaseStartupPages(slog.New(slog.DiscardHandler))
	}
	if code := transport.Supervise(args); code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}
