package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// A port another process holds is said in one line with what to do: stop
// it, or let serve pick a free port.
func TestServeOnAPortInUseSaysWhatToDo(t *testing.T) {
	is := is.New(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	defer busy.Close()
	for _, flag := range []string{"--listen", "--admin-addr"} {
		t.Run(flag, func(t *testing.T) {
			is := is.New(t)
			args := []string{"--listen", busy.Addr().String(), "--", "true"}
			if flag == "--admin-addr" {
				args = []string{"--listen", "127.0.0.1:0", "--admin-addr", busy.Addr().String(), "--", "true"}
			}
			var stderr bytes.Buffer
			err := Serve(context.Background(), args, func(string) string { return "" }, strings.NewReader(""), io.Discard, &stderr, Options{})
			var exit *ExitError
			is.True(errors.As(err, &exit))
			is.Equal(exit.Code, ExitFailure)
			var line string
			for _, l := range strings.Split(stderr.String(), "\n") {
				if strings.HasPrefix(l, "mcp-stdio serve: ") {
					is.Equal(line, "") // one line
					line = l
				}
			}
			is.True(strings.Contains(line, flag+" "+busy.Addr().String()))
			is.True(strings.Contains(line, "another process is using port"))
			is.True(strings.Contains(line, flag+" 127.0.0.1:0 picks a free one"))
		})
	}
}

func TestListenRemedyOtherCauses(t *testing.T) {
	is := is.New(t)
	_, err := net.Listen("tcp", "192.0.2.1:0") // TEST-NET-1: no machine has it
	if err != nil {
		is.True(strings.Contains(listenRemedy("--listen", "192.0.2.1:0", err), "no such address"))
	}
	generic := listenRemedy("--listen", "nonsense", errors.New("missing port in address"))
	is.True(strings.Contains(generic, "missing port in address"))
	is.True(strings.Contains(generic, "--listen 127.0.0.1:0"))
}
