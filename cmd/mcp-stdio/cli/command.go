package cli

import (
	"errors"
	"strings"
)

// splitCommand splits a command line into its arguments the way a POSIX
// shell would, without expanding anything: white space separates
// arguments; 'single quotes' keep everything up to the next single quote;
// "double quotes" keep everything but a backslash before ", \, $ or `,
// which keeps that character; outside quotes a backslash keeps the next
// character. There are no variables, globs, ~, pipes or redirections: a
// user who wants them writes sh -c '…'.
func splitCommand(s string) ([]string, error) {
	var (
		args  []string
		cur   strings.Builder
		inArg bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		case c == '\'':
			inArg = true
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("a single quote is not closed")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			inArg = true
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
					c = s[i]
				}
				cur.WriteByte(c)
			}
			if !closed {
				return nil, errors.New("a double quote is not closed")
			}
		case c == '\\':
			inArg = true
			if i+1 == len(s) {
				return nil, errors.New("a backslash ends it")
			}
			i++
			cur.WriteByte(s[i])
		default:
			inArg = true
			cur.WriteByte(c)
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	if len(args) == 0 {
		return nil, errors.New("it is empty")
	}
	return args, nil
}
