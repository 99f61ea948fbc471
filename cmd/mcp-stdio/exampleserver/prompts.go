package exampleserver

import (
	"context"
	"strings"

	"github.com/tidwall/gjson"
)

// greetPrompt returns the one prompt.
func greetPrompt() object {
	return object{
		"name":        "greet",
		"title":       "Greeting",
		"description": "Asks the model to greet someone by name.",
		"arguments":   []object{{"name": "name", "description": "Who to greet.", "required": true}},
	}
}

// greetNames are the completions offered for the greet prompt's argument.
var greetNames = []string{"Ada", "Alan", "Barbara", "Edsger", "Grace", "Ken", "Margaret", "Rob"}

func (s *server) listPrompts(_ context.Context, req *request) (object, error) {
	ps, next, err := paginate(s, req, []object{greetPrompt()})
	if err != nil {
		return nil, err
	}
	return page("prompts", ps, next), nil
}

func (s *server) getPrompt(_ context.Context, req *request) (object, error) {
	name := req.params.Get("name")
	if name.Type != gjson.String || name.Str != "greet" {
		return nil, invalidParams("unknown prompt %s", name.Raw)
	}
	who := req.params.Get("arguments.name")
	if who.Type != gjson.String || who.Str == "" {
		return nil, invalidParams("the greet prompt needs the argument %q", "name")
	}
	return object{
		"description": "A greeting for " + who.Str,
		"messages": []object{{
			"role":    "user",
			"content": object{"type": "text", "text": "Please greet " + who.Str + " warmly, in one sentence."},
		}},
	}, nil
}

// complete answers completion/complete: names for the greet prompt's
// argument, nothing for the echo template's.
func (s *server) complete(_ context.Context, req *request) (object, error) {
	ref, arg := req.params.Get("ref"), req.params.Get("argument")
	value := arg.Get("value")
	if arg.Get("name").Type != gjson.String || value.Type != gjson.String {
		return nil, invalidParams("completion/complete needs argument.name and argument.value (strings)")
	}
	values := []string{}
	switch {
	case ref.Get("type").String() == "ref/prompt" && ref.Get("name").String() == "greet":
		if arg.Get("name").Str != "name" {
			return nil, invalidParams("the greet prompt has no argument %q", arg.Get("name").Str)
		}
		for _, n := range greetNames {
			if strings.HasPrefix(strings.ToLower(n), strings.ToLower(value.Str)) {
				values = append(values, n)
			}
		}
	case ref.Get("type").String() == "ref/resource" && ref.Get("uri").String() == echoTemplate:
	default:
		return nil, invalidParams("nothing to complete for ref %s", ref.Raw)
	}
	return object{"completion": object{"values": values, "total": len(values), "hasMore": false}}, nil
}
