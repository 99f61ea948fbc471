package mw_test

import (
	"fmt"
	"net/http"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// Diagnose explains a failed first contact on one line, with the advice
// the caller gives.
func ExampleDiagnose() {
	refusal := &frame.StatusError{Code: http.StatusUnauthorized, Header: http.Header{}, Body: []byte(`{"error":"invalid_token"}`)}
	u := mw.Diagnose(&frame.SendError{Err: refusal}, mw.DiagnoseOptions{
		URL:    "https://user:pw@example.com/mcp",
		Advice: func(u *mw.Unreachable) string { return "pass a token with -H \"Authorization: Bearer …\"" },
	})
	fmt.Println(u)
	// Output:
	// HTTP 401 from https://example.com/mcp: the server wants credentials; the server said: "invalid_token"; pass a token with -H "Authorization: Bearer …"
}
