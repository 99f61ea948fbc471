package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Defaults of [CommandOptions].
const (
	// DefaultCommandTimeout bounds one run of the token command.
	DefaultCommandTimeout = 30 * time.Second
	// commandOutputMax bounds what the command may print on stdout: a
	// token is at most a few KiB (a JWT with many claims).
	commandOutputMax = 64 << 10
	// commandStderrExcerpt is how much of the command's stderr an error
	// quotes.
	commandStderrExcerpt = 300
)

// CommandOptions configures a [CommandSource].
type CommandOptions struct {
	// Argv is the command and its arguments, run without a shell; Argv[0]
	// is looked up in PATH. Required.
	Argv []string
	// Name is how errors name the command (the relay: the flag,
	// "--bearer-token-command"); "" means "the token command".
	Name string
	// Timeout bounds one run; 0 means [DefaultCommandTimeout]. A run that
	// takes longer is killed.
	Timeout time.Duration
	// Env is the command's environment; nil means this process's, less
	// MCP_BEARER_TOKEN. The token it prints is never put in a child's
	// arguments or environment.
	Env []string
}

// CommandSource gets the bearer token by running a command that prints it
// on stdout (`gcloud auth print-access-token`, `az account
// get-access-token --query accessToken -o tsv`), for tokens that expire
// within the hour. It runs the command at [CommandSource.Fetch] and again
// when the server answers 401 to the current token, at most once per 401:
// the requests that meet a 401 on one token all wait for one run. Its
// output, surrounding white space trimmed, is the token; no output, or an
// exit status other than 0, is an error that quotes the start of the
// command's stderr. The token is never logged.
//
// It is a [TokenSource] for [Transport] and the relay's reauth stage's
// Authorizer (Generation, Unauthorized, Forbidden). It is safe for
// concurrent use.
type CommandSource struct {
	o CommandOptions

	mu     sync.Mutex
	tok    string
	gen    uint64
	flight *commandFlight
}

// commandFlight is one run of the command; waiters block on done.
type commandFlight struct {
	done    chan struct{}
	changed bool // the run gave a new token
	err     error
}

// NewCommandSource returns a source that runs o.Argv. It runs nothing
// yet: call [CommandSource.Fetch] for the first token.
func NewCommandSource(o CommandOptions) (*CommandSource, error) {
	if len(o.Argv) == 0 || o.Argv[0] == "" {
		return nil, errors.New("the token command is empty")
	}
	if o.Name == "" {
		o.Name = "the token command"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultCommandTimeout
	}
	if o.Env == nil {
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MCP_BEARER_TOKEN=") {
				o.Env = append(o.Env, kv)
			}
		}
	}
	return &CommandSource{o: o}, nil
}

// Fetch runs the command and makes what it prints the current token.
func (s *CommandSource) Fetch(ctx context.Context) error {
	s.mu.Lock()
	_, err := s.runLocked(ctx)
	return err
}

// BearerToken returns the current token and its generation.
func (s *CommandSource) BearerToken(context.Context) (string, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tok, s.gen
}

// Generation returns the generation of the current token.
func (s *CommandSource) Generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Unauthorized handles a 401 to the token of generation gen (or of the
// generation [Transport] stamped on h): when a newer token exists the
// request is simply sent again; otherwise the command runs once for all
// the requests that met this 401, and the request is sent again with
// what it printed. The same token printed again is an error: sending it
// again would be refused again.
func (s *CommandSource) Unauthorized(ctx context.Context, gen uint64, h http.Header) (bool, error) {
	if g, ok := stampedGeneration(h); ok {
		gen = g
	}
	s.mu.Lock()
	if gen != s.gen {
		s.mu.Unlock()
		return true, nil
	}
	changed, err := s.runLocked(ctx)
	if err != nil {
		return false, err
	}
	if !changed {
		return false, fmt.Errorf("%s printed the token the server just refused; check the account it uses", s.o.Name)
	}
	return true, nil
}

// Forbidden leaves a 403 as it is: a new token of the same account would
// not have more rights.
func (s *CommandSource) Forbidden(context.Context, uint64, http.Header) (bool, error) {
	return false, nil
}

// runLocked runs the command as the one flight; s.mu is held on entry and
// released on return. It reports whether the token changed.
func (s *CommandSource) runLocked(ctx context.Context) (bool, error) {
	if fl := s.flight; fl != nil {
		s.mu.Unlock()
		select {
		case <-fl.done:
			return fl.changed, fl.err
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
	}
	fl := &commandFlight{done: make(chan struct{})}
	s.flight = fl
	s.mu.Unlock()

	// The run outlives the request that started it (others wait for it
	// too), bounded by the timeout.
	tok, err := s.run(context.WithoutCancel(ctx))

	s.mu.Lock()
	changed := false
	if err == nil && tok != s.tok {
		s.tok = tok
		s.gen++
		changed = true
	}
	s.flight = nil
	fl.changed, fl.err = changed, err
	close(fl.done)
	s.mu.Unlock()
	return changed, err
}

// run runs the command once and returns the token it printed.
func (s *CommandSource) run(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.o.Argv[0], s.o.Argv[1:]...)
	cmd.Env = s.o.Env
	var stdout limitedBuffer
	stdout.max = commandOutputMax
	var stderr limitedBuffer
	stderr.max = 4 << 10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A grandchild that keeps the pipes open does not hold us past this.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	excerpt := stderrExcerpt(stderr.Bytes())
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s did not finish within %s and was stopped%s; run it yourself to see why", s.o.Name, s.o.Timeout, excerpt)
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%s: %s is not found: install it, or give its full path", s.o.Name, s.o.Argv[0])
	case err != nil && cmd.ProcessState == nil:
		return "", fmt.Errorf("%s could not start: %w", s.o.Name, err)
	case err != nil && stdout.over:
		return "", fmt.Errorf("%s printed more than %d KiB on stdout: it must print the token alone", s.o.Name, commandOutputMax>>10)
	case err != nil:
		return "", fmt.Errorf("%s failed (%s)%s; run it yourself to see why (it must print the token on stdout and exit 0; a sign-in it needs must be done first)", s.o.Name, cmd.ProcessState, excerpt)
	case stdout.over:
		return "", fmt.Errorf("%s printed more than %d KiB on stdout: it must print the token alone", s.o.Name, commandOutputMax>>10)
	}
	tok := strings.TrimSpace(stdout.String())
	switch {
	case tok == "":
		return "", fmt.Errorf("%s printed nothing on stdout%s; it must print the token (run it yourself to see why)", s.o.Name, excerpt)
	case strings.ContainsAny(tok, "\r\n"):
		return "", fmt.Errorf("%s printed more than one line on stdout: it must print the token alone", s.o.Name)
	case !validTokenChars(tok):
		return "", fmt.Errorf("%s printed something that is not a token (spaces or control characters in it)", s.o.Name)
	}
	return tok, nil
}

// validTokenChars reports whether tok can go in an Authorization header
// as a bearer token: visible ASCII, no spaces.
func validTokenChars(tok string) bool {
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// stderrExcerpt quotes the start of the command's stderr for an error, on
// one line, or returns "" when it printed nothing.
func stderrExcerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(bytes.ToValidUTF8(b, []byte("?")))), " ")
	if s == "" {
		return ""
	}
	if len(s) > commandStderrExcerpt {
		n := commandStderrExcerpt
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return fmt.Sprintf("; it said: %q", s)
}

// limitedBuffer keeps the first max bytes written to it and notes whether
// more came; it never fails a write, so the command is not killed by a
// broken pipe.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
