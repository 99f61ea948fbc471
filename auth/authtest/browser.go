package authtest

import (
	"fmt"
	"os"
)

// Browser is the main function of a program that plays the user's browser
// for a command line such as $BROWSER, which appends the URL to open: a
// test binary that doubles as that program runs Browser with its
// arguments. Browser visits its one argument with [Visit] and returns the
// exit status: 0 once the redirects were followed, 1 if the visit failed,
// 2 without exactly one argument. It reports failures on stderr.
func Browser(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "browser: usage: browser URL")
		return 2
	}
	if err := Visit(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	return 0
}
