package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The flag vocabulary both commands share: durations, sizes and log
// levels are taken in one format everywhere and shown as they are typed;
// help lists flags with two dashes and a placeholder, as the README does;
// a flag error is one line that says where to look.

// errDuration and errSize say what a duration and a size look like (the
// flag package's message names the value given).
var (
	errDuration = errors.New("want seconds (30) or a duration such as 30s or 5m")
	errSize     = errors.New("want bytes (1048576) or a size such as 64MiB")
)

// duration is a duration flag: plain (possibly fractional) seconds, as the
// Python tool takes them ("30", "1.5"), or a Go duration ("30s", "5m",
// "1h30m"). It is never negative.
type duration time.Duration

func (d *duration) String() string { return formatDuration(time.Duration(*d)) }

func (d *duration) Set(v string) error {
	v = strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 || math.IsNaN(f) || f > 1e9 {
			return errDuration
		}
		*d = duration(f * float64(time.Second))
		return nil
	}
	p, err := time.ParseDuration(v)
	if err != nil || p < 0 {
		return errDuration
	}
	*d = duration(p)
	return nil
}

func (d duration) std() time.Duration { return time.Duration(d) }

// orOff maps 0 to "no limit" (a negative duration for the relay's options).
func (d duration) orOff() time.Duration {
	if d == 0 {
		return -1
	}
	return time.Duration(d)
}

// formatDuration writes d the way a user would type it: 30m, 2s, 1h30m,
// 1.5s; 0 as 0.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	// time.Duration writes 30m0s and 1h0m0s: drop the zero units.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// byteSize is a size flag: a number of bytes, optionally with a binary
// suffix (KiB, MiB, GiB; K, M, G and KB, MB, GB mean the same).
type byteSize int64

func (b *byteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) Set(s string) error {
	v, mult := splitSizeSuffix(strings.TrimSpace(s))
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return errSize
	}
	*b = byteSize(n * mult)
	return nil
}

// sizeSuffixes are the unit suffixes byteSize accepts, longest first.
var sizeSuffixes = []struct {
	suffix string
	mult   int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
	{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10},
}

// splitSizeSuffix splits a unit suffix off a size and returns the number
// and the unit's multiplier (1 without a suffix).
func splitSizeSuffix(v string) (string, int64) {
	for _, u := range sizeSuffixes {
		if len(v) > len(u.suffix) && strings.EqualFold(v[len(v)-len(u.suffix):], u.suffix) {
			return strings.TrimSpace(v[:len(v)-len(u.suffix)]), u.mult
		}
	}
	return v, 1
}

// logLevel is the --log-level flag: debug, info, warn or error, shown in
// lower case, as typed.
type logLevel slog.Level

func (l *logLevel) String() string { return strings.ToLower(slog.Level(*l).String()) }

func (l *logLevel) Set(v string) error {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(v)); err != nil {
		return errors.New("want debug, info, warn or error")
	}
	*l = logLevel(lv)
	return nil
}

func (l logLevel) level() slog.Level { return slog.Level(l) }

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// helpLayout says how a command's help lists its flags.
type helpLayout struct {
	// order lists the flags in the order the help shows them; flags not
	// listed and not hidden follow, sorted.
	order []string
	// short maps a flag to its one-letter shorthand, shown with it.
	short map[string]string
	// hidden flags are accepted but not listed (aliases and deprecated
	// names; the help's text mentions them).
	hidden []string
	// defaults replaces the default shown for a flag ("" shows none): for
	// defaults taken from the environment or the machine.
	defaults map[string]string
}

// newFlagSet returns a flag set that prints nothing: the commands print
// their help and their errors themselves.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// usagePrinter returns the function that prints a command's help: its
// text, then its flags as layout says.
func usagePrinter(fs *flag.FlagSet, text string, layout helpLayout) func(w io.Writer) {
	return func(w io.Writer) {
		fmt.Fprint(w, text)
		printFlags(w, fs, layout)
	}
}

// printFlags lists the flags of fs: "--name PLACEHOLDER", with its
// shorthand, then its usage and default on the next line.
func printFlags(w io.Writer, fs *flag.FlagSet, layout helpLayout) {
	skip := map[string]bool{}
	for _, n := range layout.hidden {
		skip[n] = true
	}
	for _, s := range layout.short {
		skip[s] = true
	}
	names := slices.Clone(layout.order)
	var rest []string
	fs.VisitAll(func(f *flag.Flag) {
		if !skip[f.Name] && !slices.Contains(names, f.Name) {
			rest = append(rest, f.Name)
		}
	})
	for _, name := range append(names, rest...) {
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		placeholder, usage := flag.UnquoteUsage(f)
		if isBool(f) {
			placeholder = ""
		}
		head := "  "
		if s, ok := layout.short[name]; ok {
			head += "-" + s + ", "
		}
		head += dashes(name)
		if placeholder != "" {
			head += " " + placeholder
		}
		def, ok := layout.defaults[name]
		if !ok && !isBool(f) && f.DefValue != "" && f.DefValue != "0" {
			def = f.DefValue
		}
		if def != "" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(w, "%s\n        %s\n", head, usage)
	}
	fmt.Fprintf(w, "  -h, --help\n        print this help\n")
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// dashes writes a flag name as it is typed: -H, --header.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagNameInError finds the flag names in the flag package's errors, which
// it writes with one dash.
var flagNameInError = regexp.MustCompile(`(^|[ :])-(-?[A-Za-z][\w.-]*)`)

// flagErrorText rewrites a flag package error the way the help writes
// flags: "flag provided but not defined: -nope" becomes "unknown flag
// --nope".
func flagErrorText(err error) string {
	s := err.Error()
	s = strings.Replace(s, "flag provided but not defined:", "unknown flag", 1)
	s = strings.Replace(s, "flag needs an argument:", "missing the value of", 1)
	s = strings.Replace(s, " for flag -", " for -", 1)
	if strings.HasPrefix(s, "invalid boolean value") {
		s = strings.Replace(s, ": parse error", ": want true or false", 1)
	}
	s = strings.Replace(s, ": parse error", ": want a whole number", 1)
	s = strings.Replace(s, ": value out of range", ": too large", 1)
	return flagNameInError.ReplaceAllStringFunc(s, func(m string) string {
		sub := flagNameInError.FindStringSubmatch(m)
		return sub[1] + dashes(strings.TrimPrefix(sub[2], "-"))
	})
}

// parseError is what a command returns when its flags do not parse: help
// was asked for (usage on stdout, exit 0), or one line on stderr says what
// is wrong and where to look (exit 2).
func parseError(err error, command string, usage func(io.Writer), stdout, stderr io.Writer) error {
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return nil
	}
	fmt.Fprintf(stderr, "%s: %s (run '%s --help' for the flags)\n", command, flagErrorText(err), command)
	return &ExitError{Code: ExitUsage}
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
