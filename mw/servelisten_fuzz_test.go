package mw

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// FuzzServeListenAck: whatever filter a client sends, the ack is one valid
// message naming the listen, honouring at most what was asked, and its
// resourceSubscriptions are distinct non-empty strings of the request, at
// most MaxListenResourceSubscriptions.
func FuzzServeListenAck(f *testing.F) {
	for _, p := range []string{
		`{}`,
		`{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}`,
		`{"resourceSubscriptions":["a","a",1,null,"","\u00e9",{"x":[]},"file:\/\/\/x"]}`,
		`{"resourceSubscriptions":"a","toolsListChanged":"true"}`,
		`{"toolsListChanged":true,"toolsListChanged":false}`,
		`{"resourceSubscriptions":["a"],"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
		`[]`,
	} {
		f.Add([]byte(p))
	}
	conn := NewConn(EraSession)
	conn.Initialized(frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`),
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{"capabilities":`+allCaps+`}}`))
	ctx := WithConn(context.Background(), conn)
	st := &serveListen{log: loggerOrDiscard(nil)}
	f.Fuzz(func(t *testing.T, filter []byte) {
		m, err := frame.Parse(append(append([]byte(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"subscriptions/listen","params":{"notifications":`), filter...), "}}"...))
		if err != nil || m.Kind() != frame.Request { // a name given twice in notifications is refused
			return
		}
		req := m.Get("params.notifications")
		if !req.IsObject() {
			return
		}
		s := st.newListen(ctx, m.ID(), req)
		defer s.stop()
		a := s.ack()
		if a.Method() != listenAckMethod || a.Get(mcp.ParamsSubscriptionID).Str != "mcp-stdio/serve/1" {
			t.Fatalf("ack %s", a)
		}
		var got struct {
			Params struct {
				Notifications map[string]json.RawMessage `json:"notifications"`
			} `json:"params"`
		}
		if err := json.Unmarshal(a.Bytes(), &got); err != nil {
			t.Fatalf("ack %s: %v", a, err)
		}
		for k := range got.Params.Notifications {
			if k != "resourceSubscriptions" && req.Get(k).Raw != "true" && string(got.Params.Notifications[k]) != "true" {
				t.Fatalf("ack %s honours %s, not asked in %s", a, k, req.Raw)
			}
		}
		asked := map[string]bool{}
		for _, u := range req.Get("resourceSubscriptions").Array() {
			asked[u.String()] = u.Type.String() == "String"
		}
		seen := map[string]bool{}
		for _, u := range a.Get("params.notifications.resourceSubscriptions").Array() {
			if u.Str == "" || seen[u.Str] || !asked[u.Str] {
				t.Fatalf("ack %s: %s is not a distinct string asked in %s", a, u.Raw, req.Raw)
			}
			seen[u.Str] = true
		}
		if len(seen) > MaxListenResourceSubscriptions {
			t.Fatalf("ack honours %d URIs", len(seen))
		}
	})
}
