// Package golden holds the byte-for-byte transcript tests of the whole
// relay and of serve. For the relay, each file under testdata/relay is a txtar archive giving the
// command-line arguments, the environment, the lines a stdio client writes,
// a script for a fake MCP server, and the exact HTTP requests and stdout
// bytes the relay must produce. The tests drive cli.Relay, the very code the
// binary runs, in-process under testing/synctest, against an in-process
// http.RoundTripper, so time (backoff, Retry-After, idle and drain
// timeouts) is fake and every run is deterministic.
//
// The files under testdata/serve do the same for serve: the flags, the
// HTTP requests a client sends, and the exact responses (status, the headers
// that matter, bodies), with the bundled example server as a real child
// process. Session ids are random, so they appear as $SESSION placeholders.
//
// It is the only package that defines the -update flag:
//
//	go test ./golden -update
//
// rewrites the want/http, want/stdout, want/exit and want/responses
// sections of every transcript from what the gateway did, leaving everything else byte for byte.
// Review that diff like code. See README.md for the format.
//
// Apart from this documentation the package is test code only.
package golden
