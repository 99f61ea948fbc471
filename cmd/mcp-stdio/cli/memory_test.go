package cli

import (
	"testing"

	"github.com/matryer/is"
)

func TestParseMemTotal(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want int64
		ok   bool
	}{
		{"linux", "MemTotal:       16314116 kB\nMemFree:         1010104 kB\n", 16314116 << 10, true},
		{"not first", "MemFree: 1 kB\nMemTotal: 2048 kB\n", 2048 << 10, true},
		{"no newline", "MemTotal: 4 kB", 4 << 10, true},
		{"missing", "MemFree: 1 kB\n", 0, false},
		{"other unit", "MemTotal: 4 MB\n", 0, false},
		{"not a number", "MemTotal: lots kB\n", 0, false},
		{"zero", "MemTotal: 0 kB\n", 0, false},
		{"huge", "MemTotal: 99999999999999999 kB\n", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, ok := parseMemTotal([]byte(tt.in))
			is.Equal(ok, tt.ok)
			is.Equal(got, tt.want)
		})
	}
}

func TestDefaultMaxBuffered(t *testing.T) {
	is := is.New(t)
	is.Equal(defaultMaxBuffered(16<<30, true, 64<<20), int64(4<<30))   // a quarter
	is.Equal(defaultMaxBuffered(0, false, 64<<20), int64(1<<30))       // unknown: 1 GiB
	is.Equal(defaultMaxBuffered(128<<20, true, 64<<20), int64(64<<20)) // never below one message
	is.Equal(formatSize(4<<30), "4 GiB")
	is.Equal(formatSize(3<<29+1<<27), "1.6 GiB")
	is.Equal(formatSize(100), "100 B")
}

// FuzzParseMemTotal feeds arbitrary text as /proc/meminfo: nothing may
// panic, and a size it returns is a positive number of whole KiB.
func FuzzParseMemTotal(f *testing.F) {
	for _, s := range []string{
		"MemTotal:       16314116 kB\nMemFree:         1010104 kB\n",
		"MemTotal: 1 kB",
		"MemTotal:\n",
		"MemTotal: -5 kB\n",
		"MemTotal: 9223372036854775807 kB\n",
		"memtotal: 5 kB\nMemTotal:\t7\tkB\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		n, ok := parseMemTotal(in)
		if ok && (n <= 0 || n%1024 != 0) {
			t.Fatalf("MemTotal %d from %q", n, in)
		}
		if !ok && n != 0 {
			t.Fatalf("%d without ok", n)
		}
	})
}
