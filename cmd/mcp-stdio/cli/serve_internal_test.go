package cli

import (
	"testing"

	"github.com/matryer/is"
)

func TestByteSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true},
		{"64MiB", 64 << 20, true},
		{"64 MiB", 64 << 20, true},
		{"2kb", 2 << 10, true},
		{"1G", 1 << 30, true},
		{"", 0, false},
		{"MiB", 0, false},
		{"-1", 0, false},
		{"1.5MiB", 0, false},
		{"99999999999GiB", 0, false},
	} {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			var b byteSize
			err := b.Set(tt.in)
			is.Equal(err == nil, tt.ok)
			if tt.ok {
				is.Equal(int64(b), tt.want)
			}
		})
	}
}
