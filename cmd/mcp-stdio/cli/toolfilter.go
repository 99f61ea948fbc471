package cli

import (
	"flag"
	"fmt"
)

// toolFilterFlags are the flags of the tool filter (mw.ToolFilter), the
// same on the relay and on serve.
type toolFilterFlags struct {
	allow, deny stringList
}

// register defines --allow-tool, --deny-tool and mcp-remote's name for
// the latter, --ignore-tool, on fs.
func (t *toolFilterFlags) register(fs *flag.FlagSet) {
	fs.Var(&t.allow, "allow-tool", "offer the client only the tools whose names match `GLOB` ('*' any run of characters, '?' one); repeatable, and --deny-tool wins")
	fs.Var(&t.deny, "deny-tool", "hide the tools whose names match `GLOB` from tools/list and refuse calls to them (repeatable)")
	fs.Var(&t.deny, "ignore-tool", "mcp-remote's name for --deny-tool")
}

// check refuses an empty pattern, in one line that says what to do.
func (t *toolFilterFlags) check() error {
	for _, l := range []struct {
		name string
		list stringList
	}{{"--allow-tool", t.allow}, {"--deny-tool", t.deny}} {
		for _, p := range l.list {
			if p == "" {
				return fmt.Errorf("%s needs a tool name or a glob such as 'github_*', not an empty value", l.name)
			}
		}
	}
	return nil
}
