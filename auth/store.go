package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// maxUnixSeconds is the end of the year 9999; later times are nonsense.
const maxUnixSeconds = 253402300799

// DefaultStorePath returns where tokens are kept:
// $XDG_CONFIG_HOME/mcp-stdio/tokens.json when XDG_CONFIG_HOME is an
// absolute path, else ~/.config/mcp-stdio/tokens.json on every platform
// (the location mcp-stdio has always used). getenv is os.Getenv in
// production.
func DefaultStorePath(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "mcp-stdio", "tokens.json"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("token store: no home directory: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".config", "mcp-stdio", "tokens.json"), nil
}

// storeEntry is what the store keeps per server, under the server's
// canonical URI. The member names are those of mcp-stdio 0.8.0's store, so
// a store it wrote still loads; members this version does not know are
// ignored. Every field but the endpoints is a credential.
type storeEntry struct {
	AccessToken  string   `json:"access_token"`
	TokenType    string   `json:"token_type,omitempty"`
	ExpiresAt    *float64 `json:"expires_at"` // seconds since the epoch; null = never
	ObtainedAt   *float64 `json:"obtained_at,omitempty"`
	RefreshToken string   `json:"refresh_token,omitempty"`
	Scope        string   `json:"scope,omitempty"`
	Resource     string   `json:"resource,omitempty"`

	ClientID                string   `json:"client_id,omitempty"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ClientSecretExpiresAt   *float64 `json:"client_secret_expires_at,omitempty"` // null or 0 = never
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	// ClientFlow is the grant the client was registered for: "code" (also
	// when empty) or "device".
	ClientFlow string `json:"client_flow,omitempty"`

	// Issuer is the authorization server the token and the client belong
	// to; a client is never reused with another issuer.
	Issuer                string `json:"issuer,omitempty"`
	TokenEndpoint         string `json:"token_endpoint,omitempty"`
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
	RegistrationEndpoint  string `json:"registration_endpoint,omitempty"`
}

// token returns the entry's token.
func (e *storeEntry) token() Token {
	return Token{
		AccessToken:  e.AccessToken,
		RefreshToken: e.RefreshToken,
		Scope:        e.Scope,
		Expiry:       fromUnix(e.ExpiresAt),
		Obtained:     fromUnix(e.ObtainedAt),
	}
}

// setToken stores t in the entry.
func (e *storeEntry) setToken(t Token) {
	e.AccessToken = t.AccessToken
	e.TokenType = "Bearer"
	e.RefreshToken = t.RefreshToken
	e.Scope = t.Scope
	e.ExpiresAt = toUnix(t.Expiry)
	e.ObtainedAt = toUnix(t.Obtained)
}

// clearToken forgets the grant but keeps the client registration, so that
// the next sign-in reuses it (mcp-remote#256).
func (e *storeEntry) clearToken() {
	e.AccessToken, e.RefreshToken, e.Scope = "", "", ""
	e.ExpiresAt, e.ObtainedAt = nil, nil
}

// clientCreds returns the client stored in the entry.
func (e *storeEntry) clientCreds() clientCreds {
	cc := clientCreds{id: e.ClientID, secret: e.ClientSecret, method: e.TokenEndpointAuthMethod, secretExpires: fromUnix(e.ClientSecretExpiresAt)}
	if cc.method == "" {
		cc.method = chooseAuthMethod(cc.secret != "", nil)
	}
	return cc
}

// clientFlow returns ClientFlow with its default.
func (e *storeEntry) clientFlow() string {
	if e.ClientFlow == "" {
		return "code"
	}
	return e.ClientFlow
}

// setClient stores the client in the entry.
func (e *storeEntry) setClient(cc clientCreds, flow string) {
	e.ClientID, e.ClientSecret, e.TokenEndpointAuthMethod, e.ClientFlow = cc.id, cc.secret, cc.method, flow
	e.ClientSecretExpiresAt = nil
	if !cc.secretExpires.IsZero() {
		e.ClientSecretExpiresAt = toUnix(cc.secretExpires)
	}
}

func fromUnix(p *float64) time.Time {
	if p == nil || *p <= 0 || *p > maxUnixSeconds || math.IsNaN(*p) {
		return time.Time{}
	}
	sec, frac := math.Modf(*p)
	return time.Unix(int64(sec), int64(frac*1e9))
}

func toUnix(t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	v := float64(t.UnixMilli()) / 1000
	return &v
}

// tokenStore is the token file: one JSON object whose members are the
// servers' canonical URIs and whose values are [storeEntry] objects.
//
//   - The directory is created 0700 and the file is written 0600, each time
//     through a fresh temp file (O_CREAT|O_EXCL, 0600), fsync, rename over
//     the old file and fsync of the directory, so a reader sees the old or
//     the new file, never half of one.
//   - Read-modify-write runs under a cross-process lock (flock on
//     tokens.json.lock, see lock_unix.go) and an in-process mutex, so that
//     two relays never spend the same rotating refresh token: the refresh
//     happens inside the transaction, after re-reading the file.
//   - A file that does not parse is reported and moved aside to
//     tokens.json.corrupt-<unix nanoseconds> before the next write, never
//     silently overwritten. Entries of other servers and unknown members of
//     the file are kept as they are.
type tokenStore struct {
	path  string
	log   *slog.Logger
	clock Clock
	// lockWait bounds the wait for the cross-process lock; after it the
	// transaction proceeds unlocked, with a warning, rather than hang on a
	// stuck sibling.
	lockWait time.Duration
	mu       sync.Mutex
}

// errStoreCorrupt marks a token file that does not parse.
var errStoreCorrupt = errors.New("token store is corrupt")

// readAll reads the whole file. A missing file is an empty store.
func (s *tokenStore) readAll() (map[string]json.RawMessage, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]json.RawMessage{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("token store %s: %w", s.path, err)
	}
	s.tighten()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: %s does not hold a JSON object", errStoreCorrupt, s.path)
	}
	return m, nil
}

// tighten makes an existing file private again if something loosened it.
func (s *tokenStore) tighten() {
	if fi, err := os.Stat(s.path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(s.path, 0o600); err == nil {
			s.log.Warn("oauth: token store was readable by others; made it private", "path", s.path)
		}
	}
}

// decodeEntry decodes one entry; a malformed one counts as absent.
func (s *tokenStore) decodeEntry(key string, raw json.RawMessage) *storeEntry {
	if raw == nil {
		return nil
	}
	var e storeEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		s.log.Warn("oauth: ignoring a malformed token store entry", "server", key)
		return nil
	}
	return &e
}

// load returns the entry for key, or nil. It takes no lock: writes replace
// the file atomically.
func (s *tokenStore) load(key string) (*storeEntry, error) {
	m, err := s.readAll()
	if err != nil {
		return nil, err
	}
	return s.decodeEntry(key, m[key]), nil
}

// update runs fn on the entry for key (nil when there is none) under the
// store's locks, and writes the entry fn returns when write is true (a nil
// entry deletes key), even when fn also returns an error, which update then
// returns (joined with any write error). The entry fn receives is its own
// copy.
func (s *tokenStore) update(ctx context.Context, key string, fn func(e *storeEntry) (next *storeEntry, write bool, err error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureDir(); err != nil {
		return err
	}
	release, err := lockFile(ctx, s.path+".lock", s.lockWait)
	switch {
	case errors.Is(err, errLockTimeout):
		s.log.Warn("oauth: token store lock still held by another process; going on without it", "waited", s.lockWait)
	case err != nil:
		return err
	default:
		defer release()
	}
	m, rerr := s.readAll()
	corrupt := errors.Is(rerr, errStoreCorrupt)
	switch {
	case corrupt:
		s.log.Error("oauth: "+rerr.Error()+"; it will be moved aside before the next write", "path", s.path)
		m = map[string]json.RawMessage{}
	case rerr != nil:
		return rerr
	}
	next, write, ferr := fn(s.decodeEntry(key, m[key]))
	if !write {
		return ferr
	}
	if next == nil {
		if _, ok := m[key]; !ok {
			return ferr
		}
		delete(m, key)
	} else {
		raw, err := json.Marshal(next)
		if err != nil {
			return errors.Join(ferr, err)
		}
		m[key] = raw
	}
	if corrupt {
		aside := s.path + ".corrupt-" + strconv.FormatInt(s.clock.Now().UnixNano(), 10)
		if err := os.Rename(s.path, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errors.Join(ferr, fmt.Errorf("token store: cannot move the corrupt file aside: %w", err))
		}
		s.log.Error("oauth: moved the corrupt token store aside", "path", aside)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return errors.Join(ferr, err)
	}
	if err := writeFileAtomic(s.path, append(b, '\n')); err != nil {
		return errors.Join(ferr, err)
	}
	return ferr
}

// ensureDir creates the store's directory private to the user.
func (s *tokenStore) ensureDir() error {
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm() != 0o700 {
		_ = os.Chmod(dir, 0o700) // best effort: it may not be ours
	}
	return nil
}

// writeFileAtomic replaces path with data: a new temp file beside it
// (O_CREAT|O_EXCL, 0600), fsync, rename, fsync of the directory.
func writeFileAtomic(path string, data []byte) error {
	var f *os.File
	var tmp string
	for range 8 {
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		tmp = path + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:])
		var err error
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("token store: %w", err)
		}
		break
	}
	if f == nil {
		return errors.New("token store: cannot create a temp file")
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("token store: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	ok = true
	syncDir(filepath.Dir(path))
	return nil
}

// syncDir makes a rename in dir durable. Best effort: some systems cannot
// open or sync a directory.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}
