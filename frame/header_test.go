package frame

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"
)

func TestHeaderNamesAreCanonical(t *testing.T) {
	is := is.New(t)
	for _, name := range []string{HeaderSessionID, HeaderProtocolVersion, HeaderLastEventID} {
		is.Equal(http.CanonicalHeaderKey(name), name) // usable as an http.Header key as is
	}
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		start := time.Now()
		is.NoErr(Sleep(t.Context(), 3*time.Second))
		is.Equal(time.Since(start), 3*time.Second) // the whole wait

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start = time.Now()
		is.True(errors.Is(Sleep(ctx, time.Hour), context.Canceled))
		is.Equal(time.Since(start), time.Second) // cut short by ctx

		is.True(errors.Is(Sleep(ctx, 0), context.Canceled)) // no wait, but ctx's error
		is.NoErr(Sleep(t.Context(), -time.Second))          // no wait at all
	})
}
