package server

import (
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/matryer/is"
)

// The source of a request: the peer, unless the peer is a trusted proxy;
// then the rightmost address X-Forwarded-For names that is not one.
func TestRequestSource(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
	for _, tt := range []struct {
		name, peer string
		xff        []string
		want       string
		hint       bool
	}{
		{"no proxy", "203.0.113.5:4000", nil, "203.0.113.5", false},
		{"an untrusted peer's header is ignored", "203.0.113.5:4000", []string{"198.51.100.1"}, "203.0.113.5", true},
		{"through a trusted proxy", "127.0.0.1:4000", []string{"198.51.100.1"}, "198.51.100.1", false},
		{"a spoofed left part is not read", "127.0.0.1:4000", []string{"1.2.3.4, 198.51.100.1"}, "198.51.100.1", false},
		{"two trusted hops", "127.0.0.1:4000", []string{"198.51.100.1, 10.1.2.3"}, "198.51.100.1", false},
		{"headers in order", "127.0.0.1:4000", []string{"1.2.3.4", "198.51.100.1"}, "198.51.100.1", false},
		{"garbage stops at the hop that wrote it", "127.0.0.1:4000", []string{"198.51.100.1, nonsense, 10.1.2.3"}, "10.1.2.3", false},
		{"a trusted proxy without the header", "127.0.0.1:4000", nil, "127.0.0.1", false},
		{"IPv6 counts by /64", "[2001:db8:1:2:3:4:5:6]:443", nil, "2001:db8:1:2::/64", false},
		{"IPv6 forwarded, with a port", "127.0.0.1:1", []string{"[2001:db8::9]:5555"}, "2001:db8::/64", false},
		{"IPv4-mapped", "[::ffff:198.51.100.3]:1", nil, "198.51.100.3", false},
		{"not an IP", "@", nil, "local", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			got, hint := requestSource(r, trusted)
			is.Equal(got, tt.want)
			is.Equal(hint, tt.hint)
		})
	}
}

// A token bucket: burst at once, then one per interval; the wait it says
// is the time until the next token. A full table of buckets makes room
// from those filled up again, then from the least recently used.
func TestBuckets(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	bs := newBuckets(3, 10*time.Second, 16)
	for range 3 {
		ok, _ := bs.take("a", now)
		is.True(ok)
	}
	ok, wait := bs.take("a", now)
	is.True(!ok)
	is.Equal(wait, 10*time.Second)
	ok, wait = bs.take("a", now.Add(4*time.Second))
	is.True(!ok)
	is.Equal(wait, 6*time.Second)
	ok, _ = bs.take("a", now.Add(10*time.Second))
	is.True(ok)
	ok, _ = bs.ready("never seen", now)
	is.True(ok)

	// Keys that fill up again go first: "a", still short of tokens, stays.
	for i := range 40 {
		bs.spend(fmt.Sprint("k", i), now.Add(time.Duration(i)*time.Second))
		is.True(len(bs.m) <= 16)
	}
	_, kept := bs.m["a"]
	is.True(kept)
	// Keys that do not: the least recently used go.
	slow := newBuckets(3, time.Hour, 16)
	slow.take("a", now)
	for i := range 40 {
		slow.spend(fmt.Sprint("k", i), now.Add(time.Duration(i+1)*time.Second))
		is.True(len(slow.m) <= 16)
	}
	_, kept = slow.m["k39"]
	is.True(kept)
	_, kept = slow.m["a"]
	is.True(!kept)
	is.Equal(retryAfter(0), 1)
	is.Equal(retryAfter(1500*time.Millisecond), 2)
}
