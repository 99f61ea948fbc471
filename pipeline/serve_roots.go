package pipeline

import (
	"encoding/json"
	"fmt"
	"net/url"
)

// rootsJSON returns the roots as the array a roots/list result holds:
// [{"uri":…}], [] for none. Each must be an absolute URI; MCP's roots are
// file:// URIs.
func rootsJSON(uris []string) ([]byte, error) {
	type root struct {
		URI string `json:"uri"`
	}
	roots := make([]root, 0, len(uris))
	for _, u := range uris {
		p, err := url.Parse(u)
		if err != nil || !p.IsAbs() {
			return nil, fmt.Errorf("root %q is not an absolute URI (file:///path)", u)
		}
		roots = append(roots, root{URI: u})
	}
	return json.Marshal(roots) // our own message, not one we forward
}
