package frame_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

const callLine = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world"},"_meta":{"progressToken":7}}}`

func BenchmarkParse(b *testing.B) {
	in := []byte(callLine)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		m, err := frame.Parse(in)
		if err != nil || m.Kind() != frame.Request {
			b.Fatal(err)
		}
	}
}

func BenchmarkReaderWriterPerMessage(b *testing.B) {
	var in bytes.Buffer
	const n = 1000
	for range n {
		in.WriteString(callLine + "\n")
	}
	data := in.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r := frame.NewReader(bytes.NewReader(data), 0)
		w := frame.NewWriter(io.Discard)
		for {
			m, err := r.Read()
			if err != nil {
				break
			}
			_ = m.ID()
			_ = m.Method()
			if err := w.Write(m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}

func BenchmarkGet(b *testing.B) {
	m := frame.MustParse(callLine)
	b.ReportAllocs()
	for b.Loop() {
		if m.Get("params.name").Str != "echo" {
			b.Fatal("bad")
		}
	}
}

func BenchmarkSetMeta(b *testing.B) {
	m := frame.MustParse(callLine)
	v := []byte(`"2026-07-28"`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Set(`params._meta.io\.modelcontextprotocol\/protocolVersion`, v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSSEReader(b *testing.B) {
	var in strings.Builder
	const n = 1000
	for range n {
		in.WriteString("event: message\ndata: " + callLine + "\n\n")
	}
	s := in.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r := frame.NewSSEReader(strings.NewReader(s), 0)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}

func BenchmarkParse16MiB(b *testing.B) {
	in := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 16<<20) + `"}]}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := frame.Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetMeta(b *testing.B) {
	m := frame.MustParse(callLine)
	b.ReportAllocs()
	for b.Loop() {
		if m.Get("params._meta.progressToken").Int() != 7 {
			b.Fatal("bad")
		}
	}
}

func BenchmarkGetMetaAbsent(b *testing.B) {
	m := frame.MustParse(callLine)
	b.ReportAllocs()
	for b.Loop() {
		if m.Get("params._meta.traceparent").Exists() {
			b.Fatal("bad")
		}
	}
}

// BenchmarkParseEras parses one echo call as each era's client sends it to
// a pooled child through serve: the 2026-07-28 one under a minted id and
// with the _meta every such request carries, the session-era one bare.
func BenchmarkParseEras(b *testing.B) {
	for _, era := range []struct{ name, line string }{
		{"2026", `{"jsonrpc":"2.0","id":"mcp-stdio/serve/AbCdEfGhIjKlMnOp/12345","method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench-raw","version":"1"}}}}`},
		{"session", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`},
	} {
		b.Run("era="+era.name, func(b *testing.B) {
			in := []byte(era.line)
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if m, err := frame.Parse(in); err != nil || m.Kind() != frame.Request {
					b.Fatal(err)
				}
			}
		})
	}
}
