package frame_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestHeaderNamesAreCanonical(t *testing.T) {
	is := is.New(t)
	for _, name := range []string{frame.HeaderSessionID, frame.HeaderProtocolVersion, frame.HeaderLastEventID} {
		is.Equal(http.CanonicalHeaderKey(name), name) // usable as an http.Header key as is
	}
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		start := time.Now()
		is.NoErr(frame.Sleep(t.Context(), 3*time.Second))
		is.Equal(time.Since(start), 3*time.Second) // the whole wait

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start = time.Now()
		is.True(errors.Is(frame.Sleep(ctx, time.Hour), context.Canceled))
		is.Equal(time.Since(start), time.Second) // cut short by ctx

		is.True(errors.Is(frame.Sleep(ctx, 0), context.Canceled)) // no wait, but ctx's error
		is.NoErr(frame.Sleep(t.Context(), -time.Second))          // no wait at all
	})
}
