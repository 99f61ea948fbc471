package transport

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestReadBodyGrowsToTheAnnouncedLength(t *testing.T) {
	is := is.New(t)
	big := strings.Repeat("z", 3*bodyChunk+5)
	r := httptest.NewRequest("POST", "/", strings.NewReader(big))
	b, err := ReadBody(r, int64(len(big)))
	is.NoErr(err)
	is.Equal(len(b), len(big))

	r = httptest.NewRequest("POST", "/", io.MultiReader(strings.NewReader(big))) // unknown length
	r.ContentLength = -1
	b, err = ReadBody(r, int64(len(big)))
	is.NoErr(err)
	is.Equal(string(b), big)

	r = httptest.NewRequest("POST", "/", io.MultiReader(strings.NewReader(big)))
	r.ContentLength = -1
	_, err = ReadBody(r, int64(len(big)-1))
	var tooBig *http.MaxBytesError
	is.True(errors.As(err, &tooBig))

	r = httptest.NewRequest("POST", "/", strings.NewReader("short"))
	r.ContentLength = 10 // the body ends early
	_, err = ReadBody(r, 100)
	is.True(err != nil)
}
