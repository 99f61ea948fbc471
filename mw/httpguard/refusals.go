package httpguard

import "net/http"

// CountRefusals returns the two guards that count the HTTP requests serve
// answers itself with an error status before they reach the pipeline:
// refused by a guard (a foreign Origin or Host, a missing or wrong token,
// an unknown path, a body over the cap) or answered in error by a route
// that a guard serves (the OAuth endpoints). Such requests never become
// messages, so the per-request metrics do not see them; a rising count is
// how a proxy that rewrites Host, or a client without its token, shows.
//
// front goes first among the guards (see the package documentation): it watches the status of the answer
// (the first WriteHeader, or 200 at the first Write) and, once the
// request has been answered, calls count with it when it is 400 or more
// and the request did not reach back. back goes last: a request it sees
// has passed every guard and is not counted; it hands the pipeline the
// ResponseWriter front was given, so nothing the pipeline streams goes
// through front's. count is called on the request's goroutine.
func CountRefusals(count func(status int)) (front, back Guard) {
	front = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &refusalRecorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			if !rec.passed && rec.status >= http.StatusBadRequest {
				count(rec.status)
			}
		})
	}
	back = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rec, ok := w.(*refusalRecorder); ok {
				rec.passed = true
				w = rec.ResponseWriter
			}
			next.ServeHTTP(w, r)
		})
	}
	return front, back
}

// refusalRecorder is the ResponseWriter the guards between CountRefusals'
// two write to: it notes the status they answer with.
type refusalRecorder struct {
	http.ResponseWriter
	status int  // the status answered; 0 until then
	passed bool // the request reached back
}

func (r *refusalRecorder) WriteHeader(code int) {
	if r.status == 0 && code >= http.StatusOK { // 1xx are not the answer
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *refusalRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer (a
// guard's route may flush).
func (r *refusalRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
