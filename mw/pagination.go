package mw

import (
	"context"
	"log/slog"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// DefaultMaxPages is the most pages [PaginationMerge] fetches for one list.
const DefaultMaxPages = 100

// PaginationOptions configures [PaginationMerge].
type PaginationOptions struct {
	// MaxPages is the most pages fetched for one list; 0 means
	// [DefaultMaxPages]. Reaching it truncates the list, with a warning.
	MaxPages int
	// Logger receives warnings about truncated lists; nil discards.
	Logger *slog.Logger
}

// listKey maps each paginated list method to the array its result holds
// ([mcp.ListKey]).
func listKey(method string) string { return mcp.ListKey(method) }

// PaginationMerge returns the stage that answers a client's list request
// with the whole list, for clients that never follow nextCursor. It sits
// inside the cancel filter and outside session recovery in the relay's
// chain (see the package documentation): the merged answer passes the
// cancel filter, and every page request gets session recovery and retry on
// its own.
//
// A tools/list, resources/list, resources/templates/list or prompts/list
// request whose params has no cursor key (absent params and params:{}
// count) is merged:
//
//   - Each page, the first included, is the client's own request bytes
//     sent under a fresh minted id, with params.cursor set from the previous
//     page's result.nextCursor. Their answers are captured on the
//     client-bound side and never reach the client.
//   - Pages are followed until nextCursor is absent or empty, repeats a
//     cursor already seen, or MaxPages pages were fetched (logged as a
//     warning).
//   - The client gets one answer under its own id: page 1's result, byte for
//     byte, minus nextCursor, with the list array replaced by the
//     concatenation of every page's array elements (spliced raw, never
//     decoded).
//   - A JSON-RPC error on page 1 reaches the client as the server wrote it,
//     with the client's id put back. A Go error on page 1 is returned. A
//     failure on a later page answers with what was merged so far, with a
//     warning — unless ctx is done, when its error is returned.
//   - A notifications/cancelled naming a request being merged has its
//     requestId rewritten to the page request in flight, so the server
//     cancels what it is running.
//
// Everything else — including a list request that carries a cursor —
// passes untouched.
func PaginationMerge(o PaginationOptions) Middleware {
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	return func(next Duplex) Duplex {
		p := &pager{
			next:     next,
			maxPages: o.MaxPages,
			log:      loggerOrDiscard(o.Logger),
			pages:    NewRemap("page"),
		}
		return Duplex{
			ToServer: HandlerFunc(p.toServer),
			ToClient: HandlerFunc(p.toClient),
		}
	}
}

type pager struct {
	next     Duplex
	maxPages int
	log      *slog.Logger
	pages    *Remap // page requests, on behalf of the client's list request
}

func (p *pager) toServer(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Request:
		if key := listKey(m.Method()); key != "" && mergeable(m) {
			return p.merge(ctx, m, key)
		}
	case frame.Notification:
		m = p.pages.RetargetCancel(m)
	}
	return p.next.ToServer.Handle(ctx, m)
}

func (p *pager) toClient(ctx context.Context, m frame.Message) error {
	if p.pages.Capture(m) {
		return nil
	}
	return p.next.ToClient.Handle(ctx, m)
}

// mergeable reports whether a list request asks for the start of the list:
// params absent, or an object without a cursor key.
func mergeable(m frame.Message) bool {
	params := m.Params()
	if !params.Exists() {
		return true
	}
	return params.IsObject() && !params.Get("cursor").Exists()
}

// merge fetches every page of the list req asks for and answers req with
// the merged list.
func (p *pager) merge(ctx context.Context, req frame.Message, key string) error {
	clientID := req.ID()

	var (
		first  frame.Message // page 1's answer
		pages  int           // pages merged
		items  []string      // each page's array elements, brackets stripped
		size   int
		cursor gjson.Result // the cursor to send; none for page 1
		seen   = make(map[string]bool)
	)
	for page := 1; ; page++ {
		resp, err := p.fetch(ctx, req, clientID, cursor)
		if err != nil {
			if page == 1 || ctx.Err() != nil {
				return err
			}
			p.log.Warn("list page failed; answering with the pages so far", "method", req.Method(), "id", clientID.String(), "page", page, "err", err)
			break
		}
		if page == 1 {
			first = resp
		}
		list := resp.Get("result." + gjson.Escape(key))
		if resp.Kind() != frame.Result || !list.IsArray() {
			if page == 1 {
				// An error, or a result we cannot merge: the client gets it
				// as the server wrote it, under its own id.
				out, err := resp.WithID(clientID)
				if err != nil {
					return err
				}
				return p.next.ToClient.Handle(ctx, out)
			}
			p.log.Warn("list page not usable; answering with the pages so far", "method", req.Method(), "id", clientID.String(), "page", page, "kind", resp.Kind().String())
			break
		}
		pages++
		if elems := arrayElements(list.Raw); len(elems) > 0 {
			items = append(items, elems)
			size += len(elems) + 1
		}

		next := resp.Get("result.nextCursor")
		if next.Type != gjson.String || next.Str == "" {
			break
		}
		if seen[next.Raw] {
			p.log.Warn("server repeated a list cursor; stopping", "method", req.Method(), "id", clientID.String(), "page", page)
			break
		}
		if page >= p.maxPages {
			p.log.Warn("list truncated at the page cap", "method", req.Method(), "id", clientID.String(), "pages", page)
			break
		}
		seen[next.Raw] = true
		cursor = next
	}

	out, err := merged(first, clientID, key, items, size, pages)
	if err != nil {
		return err
	}
	return p.next.ToClient.Handle(ctx, out)
}

// fetch sends one page request and returns its answer.
func (p *pager) fetch(ctx context.Context, req frame.Message, clientID frame.ID, cursor gjson.Result) (frame.Message, error) {
	if cursor.Exists() {
		var err error
		if req, err = req.Set("params.cursor", []byte(cursor.Raw)); err != nil {
			return frame.Message{}, err
		}
	}
	return p.pages.Call(ctx, p.next.ToServer, req, clientID)
}

// merged builds the client's answer: page 1 under the client's id, without
// nextCursor, its list replaced by the elements of all pages.
func merged(first frame.Message, clientID frame.ID, key string, items []string, size, pages int) (frame.Message, error) {
	out, err := first.WithID(clientID)
	if err != nil {
		return frame.Message{}, err
	}
	if out, err = out.Delete("result.nextCursor"); err != nil {
		return frame.Message{}, err
	}
	if pages == 1 {
		return out, nil // page 1's array is the whole list
	}
	arr := make([]byte, 0, size+2)
	arr = append(arr, '[')
	for i, e := range items {
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, e...)
	}
	arr = append(arr, ']')
	return out.Set("result."+gjson.Escape(key), arr)
}

// arrayElements returns the raw text between the brackets of a JSON array,
// trimmed: its elements with their own separators.
func arrayElements(raw string) string {
	raw = strings.TrimSpace(raw)
	if len(raw) < 2 {
		return ""
	}
	return strings.TrimSpace(raw[1 : len(raw)-1])
}
