package cli

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/matryer/is"
)

// Durations are taken as plain seconds, as the Python tool takes them, or
// as Go durations, for the relay and serve alike; they are shown as typed.
func TestDurationFlag(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30", 30 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{" 10 ", 10 * time.Second, true},
		{"0", 0, true},
		{"30s", 30 * time.Second, true},
		{"5m", 5 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"250ms", 250 * time.Millisecond, true},
		{"-1", 0, false},
		{"-5s", 0, false},
		{"soon", 0, false},
		{"", 0, false},
		{"NaN", 0, false},
	} {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			var d duration
			err := d.Set(tt.in)
			is.Equal(err == nil, tt.ok)
			if tt.ok {
				is.Equal(d.std(), tt.want)
			}
		})
	}
	for d, want := range map[time.Duration]string{
		0: "0", 30 * time.Minute: "30m", 2 * time.Second: "2s", 90 * time.Minute: "1h30m",
		time.Hour: "1h", 1500 * time.Millisecond: "1.5s", 2 * time.Minute: "2m", 10 * time.Second: "10s",
	} {
		v := duration(d)
		is.New(t).Equal(v.String(), want)
		var back duration
		is.New(t).NoErr(back.Set(v.String())) // what is shown can be typed
		is.New(t).Equal(back, v)
	}
}

func TestByteSizeShownAsTyped(t *testing.T) {
	is := is.New(t)
	for n, want := range map[int64]string{64 << 20: "64MiB", 1 << 30: "1GiB", 3 << 10: "3KiB", 1000: "1000", 0: "0"} {
		b := byteSize(n)
		is.Equal(b.String(), want)
	}
}

func TestLogLevelShownAsTyped(t *testing.T) {
	is := is.New(t)
	var l logLevel
	is.NoErr(l.Set("WARN"))
	is.Equal(l.String(), "warn")
	is.True(l.Set("loud") != nil)
}

// The flag package's errors name flags with one dash; ours, as typed.
func TestFlagErrorText(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("max-sessions", 1, "")
	fs.Bool("check", false, "")
	fs.String("listen", "", "")
	var d duration
	fs.Var(&d, "timeout-read", "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "unknown flag --nope"},
		{[]string{"-x"}, "unknown flag -x"},
		{[]string{"--max-sessions", "lots"}, `invalid value "lots" for --max-sessions: want a whole number`},
		{[]string{"--check=maybe"}, `invalid boolean value "maybe" for --check: want true or false`},
		{[]string{"--listen"}, "missing the value of --listen"},
		{[]string{"--timeout-read", "soon"}, `invalid value "soon" for --timeout-read: ` + errDuration.Error()},
	} {
		err := fs.Parse(tt.args)
		if err == nil {
			t.Fatalf("%q parsed", tt.args)
		}
		if got := flagErrorText(err); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.args, got, tt.want)
		}
	}
}
