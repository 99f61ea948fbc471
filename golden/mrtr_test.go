package golden

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"
	"golang.org/x/tools/txtar"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// Transcripts of the MRTR bridge (testdata/mrtr), run on the stages of the
// relay's client end — AnswerOnce, ReservedIDs, CancelFilter, then
// mw.MRTRBridge — over a connection that speaks 2026-07-28, with a
// scripted server behind them. They stand in for relay transcripts until
// the relay's modern chain can be driven from the command line.
//
//	<comment: what the case pins and why>
//	-- initialize --     optional: the host's initialize, as the Conn records it
//	-- stdin --          the host's lines, one at a time; '#' lines are comments
//	-- server --         the server's answers, one line per request, in order:
//	                     a result object, a whole response ({"jsonrpc"…, its id
//	                     replaced by the request's), or "hold" (keep the request
//	                     until its context ends)
//	-- want/transcript -- what happened, in order:
//	                     "host → " a stdin line, "host ← " a line on stdout,
//	                     "server ← " a message sent upstream, "server → " its
//	                     answer, "server: … ended: …" a held request's end,
//	                     "sleep <d>" a backoff
//
// Each stdin line is handled as the relay's stdio transport does (a
// request on a goroutine of its own, anything else in order), and the
// harness waits until everything has settled, with no fake time passing,
// before the next. After the last line, fake time runs until every request
// has ended, for at most 10 s. go test ./golden -update rewrites
// want/transcript.

const (
	secInitialize     = "initialize"
	secWantTranscript = "want/transcript"
)

func TestMRTRStage(t *testing.T) { eachTranscript(t, "mrtr", runMRTRTranscript) }

func runMRTRTranscript(t *testing.T, file string) {
	ar := readTranscript(t, file)
	var got string
	synctest.Test(t, func(t *testing.T) { got = runMRTRStage(t, ar) })
	if *update {
		for i := range ar.Files {
			if ar.Files[i].Name == secWantTranscript {
				ar.Files[i].Data = []byte(got)
			}
		}
		if section(ar, secWantTranscript) == nil {
			ar.Files = append(ar.Files, txtar.File{Name: secWantTranscript, Data: []byte(got)})
		}
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	is.New(t).Equal(got, string(section(ar, secWantTranscript))) // want/transcript
}

// mrtrRun is one run of the stage: its transcript so far.
type mrtrRun struct {
	mu     sync.Mutex
	out    strings.Builder
	script []string
}

func (r *mrtrRun) log(format string, args ...any) {
	r.mu.Lock()
	fmt.Fprintf(&r.out, format+"\n", args...)
	r.mu.Unlock()
}

// serve is the scripted server: it answers m with the next script line.
func (r *mrtrRun) serve(up mw.Handler) mw.Handler {
	return mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
		r.log("server ← %s", m)
		if m.Kind() != frame.Request {
			return nil
		}
		r.mu.Lock()
		next := "no script line left"
		if len(r.script) > 0 {
			next, r.script = r.script[0], r.script[1:]
		}
		r.mu.Unlock()
		var answer frame.Message
		switch {
		case next == "hold":
			<-ctx.Done()
			r.log("server: request %s ended: %v", m.ID(), context.Cause(ctx))
			return context.Cause(ctx)
		case strings.HasPrefix(next, `{"jsonrpc"`):
			a, err := frame.MustParse(next).WithID(m.ID())
			if err != nil {
				return err
			}
			answer = a
		default:
			answer = frame.ResultResponse(m.ID(), []byte(next))
		}
		r.log("server → %s", answer)
		return up.Handle(ctx, answer)
	})
}

func runMRTRStage(t *testing.T, ar *txtar.Archive) string {
	r := &mrtrRun{}
	for _, line := range lines(section(ar, secServer)) {
		if line != "" && !strings.HasPrefix(line, "#") {
			r.script = append(r.script, line)
		}
	}
	conn := mw.NewConn(mw.EraStateless)
	if init := strings.TrimSpace(string(section(ar, secInitialize))); init != "" {
		conn.Initialized(frame.MustParse(init), frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{}}`))
	}
	ctx, cancel := context.WithCancel(mw.WithConn(t.Context(), conn))
	defer cancel()

	var up mw.Late
	host := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		r.log("host ← %s", m)
		return nil
	})
	chain := mw.Chain(
		mw.AnswerOnce(mw.AnswerOnceOptions{}),
		mw.ReservedIDs(nil),
		mw.CancelFilter(mw.CancelOptions{}),
		mw.MRTRBridge(mw.MRTROptions{Sleep: func(ctx context.Context, d time.Duration) error {
			r.log("sleep %v", d)
			return frame.Sleep(ctx, d) // fake time
		}}),
	)(mw.Duplex{ToServer: r.serve(&up), ToClient: host})
	up.Bind(chain.ToClient)

	var wg sync.WaitGroup
	for _, line := range lines(section(ar, secStdin)) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		m, err := frame.Parse([]byte(line))
		if err != nil {
			t.Fatalf("stdin line %q: %v", line, err)
		}
		r.log("host → %s", m)
		if m.Kind() == frame.Request {
			wg.Go(func() {
				if err := chain.ToServer.Handle(ctx, m); err != nil {
					if a := mw.ErrorFor(m, err); a.Len() > 0 {
						r.log("host ← %s", a)
					}
				}
			})
		} else if err := chain.ToServer.Handle(ctx, m); err != nil {
			r.log("error: %v", err)
		}
		synctest.Wait()
	}
	// stdin ends: what is in flight may finish, in fake time, for up to
	// 10 s (backoffs pass here), then it is cancelled.
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		r.log("stdin ended 10s ago: cancelling what is left")
	}
	cancel()
	<-drained
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.script) > 0 {
		t.Errorf("server script lines never used: %q", r.script)
	}
	return r.out.String()
}
