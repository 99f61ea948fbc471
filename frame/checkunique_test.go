package frame_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestCheckUnique(t *testing.T) {
	is := is.New(t)
	is.NoErr(frame.CheckUnique([]byte(` {"mcpServers":{"a":{"command":"x"},"b":{"command":"y","env":{"K":"1"}}}} `)))
	err := frame.CheckUnique([]byte(`{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}}}`))
	is.True(err != nil && strings.Contains(err.Error(), `mcpServers.a`)) // names where
	err = frame.CheckUnique([]byte(`{"a":{"command":"x","command":"y"}}`))
	is.True(err != nil && strings.Contains(err.Error(), `a.command`))
	is.True(errors.Is(frame.CheckUnique([]byte(`{"a":`)), frame.ErrSyntax))
	is.True(errors.Is(frame.CheckUnique([]byte(`{} {}`)), frame.ErrSyntax))
	is.True(errors.Is(frame.CheckUnique([]byte(strings.Repeat("[", 600)+strings.Repeat("]", 600))), frame.ErrTooDeep))
}
