package httpguard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/mw/httpguard"
)

// ExampleCountRefusals counts what the guards between its two refuse: the
// request with a foreign Origin, not the one the endpoint behind answers
// in error itself.
func ExampleCountRefusals() {
	counted := map[int]int{}
	front, back := httpguard.CountRefusals(func(status int) { counted[status]++ })
	endpoint := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such session", http.StatusNotFound)
	})
	h := httpguard.Guards(front, httpguard.CheckOrigin(httpguard.OriginPolicy{}), back)(endpoint)
	for _, origin := range []string{"https://evil.example", ""} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(origin, w.Code)
	}
	fmt.Println(counted)
	// Output:
	// https://evil.example 403
	//  404
	// map[403:1]
}

func TestCountRefusals(t *testing.T) {
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter) // what the guard in between does
		pass   bool                        // it passes the request on
		want   []int
	}{
		{"refused", func(w http.ResponseWriter) { w.WriteHeader(http.StatusUnauthorized) }, false, []int{401}},
		{"an informational status first", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusContinue)
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		}, false, []int{413}},
		{"answered, no error", func(w http.ResponseWriter) { _, _ = w.Write([]byte("ok")) }, false, nil},
		{"answered by a route, in error", func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) }, false, []int{400}},
		{"never answered", func(http.ResponseWriter) {}, false, nil},
		{"passed on, the endpoint's error", nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var got []int
			front, back := httpguard.CountRefusals(func(status int) { got = append(got, status) })
			guard := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if tt.pass {
						next.ServeHTTP(w, r)
						return
					}
					tt.answer(w)
				})
			}
			var endpointW http.ResponseWriter
			endpoint := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				endpointW = w
				w.WriteHeader(http.StatusInternalServerError)
			})
			rec := httptest.NewRecorder()
			httpguard.Guards(front, guard, back)(endpoint).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
			is.Equal(got, tt.want)
			if tt.pass {
				is.Equal(endpointW, http.ResponseWriter(rec)) // the endpoint writes to the connection's own writer
			}
		})
	}
}

// A guard's route may flush: the writer front hands on reaches the
// connection's through http.ResponseController.
func TestCountRefusalsFlushes(t *testing.T) {
	is := is.New(t)
	front, _ := httpguard.CountRefusals(func(int) {})
	rec := httptest.NewRecorder()
	front(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("event: x\n\n"))
		is.NoErr(http.NewResponseController(w).Flush())
	})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/sse", nil))
	is.True(rec.Flushed)
}
