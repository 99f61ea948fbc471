package transporttest

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// ReadResponse reads one HTTP response and its whole body from br, for
// tests that speak HTTP on a raw connection; it fails t when it cannot.
func ReadResponse(t testing.TB, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// ClosedByPeer reports whether the next read of br finds the connection
// closed by the other end, with nothing more sent.
func ClosedByPeer(br *bufio.Reader) bool {
	_, err := br.ReadByte()
	return errors.Is(err, io.EOF)
}

// NotificationOfSize returns a JSON-RPC notification of exactly n bytes
// (n >= 64).
func NotificationOfSize(n int) string {
	const head, tail = `{"jsonrpc":"2.0","method":"notifications/note","params":{"s":"`, `"}}`
	return head + strings.Repeat("n", n-len(head)-len(tail)) + tail
}
