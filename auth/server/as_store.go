package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// The state that lasts, and its file (--token-store). The file holds no
// token or code, only their SHA-256; it is 0600, replaced atomically
// (written to a temporary file in the same directory, synced, renamed over
// it, the directory synced), and loaded at start. It is written outside
// the server's lock, registrations in batches (storeWriter). Pending authorizations
// and codes are never written: a restart voids consent pages and codes
// not yet exchanged, nothing else.

// storeVersion is the version of the file's layout.
const storeVersion = 1

// maxStoreFile bounds the file read at start.
const maxStoreFile = 64 << 20

// state is what persists.
type state struct {
	Version int            `json:"version"`
	Clients []*clientEntry `json:"clients"`
	Grants  []*grantEntry  `json:"grants"`
	Access  []*accessEntry `json:"access_tokens"`
}

// clientEntry is a registered client.
type clientEntry struct {
	ID           string    `json:"client_id"`
	Name         string    `json:"client_name,omitempty"`
	RedirectURIs []string  `json:"redirect_uris"`
	Created      time.Time `json:"created"`
}

// grantEntry is one sign-in: a person's consent to a client, for the
// resource and scopes, kept alive by its refresh token.
type grantEntry struct {
	ID       string    `json:"id"`
	Client   string    `json:"client_id"`
	Subject  string    `json:"subject"`
	Scopes   []string  `json:"scopes"`
	Resource string    `json:"resource"`
	Created  time.Time `json:"created"`
	// Refresh is the hash of the current refresh token; Retired those of
	// the tokens it replaced, newest last, whose use revokes the grant.
	Refresh string    `json:"refresh"`
	Retired []string  `json:"retired,omitempty"`
	Expires time.Time `json:"expires"` // of the refresh token
}

// accessEntry is an issued access token, by hash.
type accessEntry struct {
	Hash    string    `json:"hash"`
	Grant   string    `json:"grant"`
	Scopes  []string  `json:"scopes"`
	Expires time.Time `json:"expires"`
}

// refreshEntry indexes a refresh token hash: its grant, and whether it is
// the current one or a rotated one.
type refreshEntry struct {
	grant   string
	current bool
}

// loadState reads the store at path; a missing file is an empty state.
func loadState(path string) (state, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return state{Version: storeVersion}, nil
	}
	if err != nil {
		return state{}, fmt.Errorf("oauth: token store: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return state{}, fmt.Errorf("oauth: token store %s is readable by others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxStoreFile+1))
	if err != nil {
		return state{}, fmt.Errorf("oauth: token store: %w", err)
	}
	if len(b) > maxStoreFile {
		return state{}, fmt.Errorf("oauth: token store %s is larger than %d bytes; move it aside", path, maxStoreFile)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return state{}, fmt.Errorf("oauth: token store %s is not valid (%v); move it aside to start afresh", path, err)
	}
	if st.Version != storeVersion {
		return state{}, fmt.Errorf("oauth: token store %s has version %d, this program reads %d; move it aside", path, st.Version, storeVersion)
	}
	return st, nil
}

// adopt indexes a loaded state. Entries missing what they need are
// dropped.
func (a *AuthorizationServer) adopt(st state) {
	for _, c := range st.Clients {
		if c != nil && c.ID != "" {
			a.clients[c.ID] = c
		}
	}
	for _, g := range st.Grants {
		if g == nil || g.ID == "" || g.Refresh == "" {
			continue
		}
		a.grants[g.ID] = g
		a.refresh[g.Refresh] = refreshEntry{grant: g.ID, current: true}
		for _, r := range g.Retired {
			a.refresh[r] = refreshEntry{grant: g.ID}
		}
	}
	for _, t := range st.Access {
		if t != nil && t.Hash != "" && a.grants[t.Grant] != nil {
			a.access[t.Hash] = t
		}
	}
}

// snapshot returns the state to write, expired entries left out: copies
// of what changes (grants), so that it can be encoded without the lock;
// clients and access tokens never change once made. Called with a.mu held
// (the read lock is enough).
func (a *AuthorizationServer) snapshot(now time.Time) state {
	st := state{Version: storeVersion, Clients: make([]*clientEntry, 0, len(a.clients)), Grants: make([]*grantEntry, 0, len(a.grants))}
	for _, c := range a.clients {
		st.Clients = append(st.Clients, c)
	}
	for _, g := range a.grants {
		cp := *g
		cp.Retired = slices.Clone(g.Retired)
		st.Grants = append(st.Grants, &cp)
	}
	for _, t := range a.access {
		if now.Before(t.Expires) {
			st.Access = append(st.Access, t)
		}
	}
	slices.SortFunc(st.Clients, func(x, y *clientEntry) int { return x.Created.Compare(y.Created) })
	slices.SortFunc(st.Grants, func(x, y *grantEntry) int { return x.Created.Compare(y.Created) })
	slices.SortFunc(st.Access, func(x, y *accessEntry) int { return x.Expires.Compare(y.Expires) })
	return st
}

// prune drops expired access tokens, grants, codes and pending
// authorizations. Called with a.mu held.
func (a *AuthorizationServer) prune(now time.Time) {
	for h, t := range a.access {
		if !now.Before(t.Expires) {
			delete(a.access, h)
		}
	}
	for id, g := range a.grants {
		if !now.Before(g.Expires) {
			a.dropGrant(id)
		}
	}
	for h, c := range a.codes {
		if !now.Before(c.expires) {
			delete(a.codes, h)
			a.noRoom = time.Time{}
		}
	}
	for id, p := range a.pending {
		if !now.Before(p.expires) {
			a.dropPending(id)
		}
	}
}

// dropGrant forgets a grant, its refresh tokens and its access tokens.
// Called with a.mu held.
func (a *AuthorizationServer) dropGrant(id string) {
	g, ok := a.grants[id]
	if !ok {
		return
	}
	delete(a.grants, id)
	a.noRoom = time.Time{}
	delete(a.refresh, g.Refresh)
	for _, r := range g.Retired {
		delete(a.refresh, r)
	}
	for h, t := range a.access {
		if t.Grant == id {
			delete(a.access, h)
		}
	}
}

// changed records a change to what persists and returns its generation.
// Called with a.mu held.
func (a *AuthorizationServer) changed() uint64 {
	a.gen++
	return a.gen
}

// saveSoon has the change of generation gen written within
// storeFlushInterval, with whatever else changes meanwhile: a registration.
// Called without a.mu held.
func (a *AuthorizationServer) saveSoon(gen uint64) {
	if a.store != nil {
		a.store.soon(gen)
	}
}

// save writes the state up to generation gen before it returns: a grant,
// a refresh, a revocation. Concurrent calls share a write. The change
// stands in memory even when the write fails, and the next write carries
// it. Called without a.mu held.
func (a *AuthorizationServer) save(gen uint64) *OAuthError {
	if a.store == nil {
		return nil
	}
	if err := a.store.flush(gen); err != nil {
		return errServer("the token store cannot be written")
	}
	return nil
}

// encode returns the state to write and the generation it holds. It
// copies the state under the read lock, and encodes it without.
func (a *AuthorizationServer) encode() ([]byte, uint64, error) {
	a.mu.RLock()
	st, gen := a.snapshot(a.now()), a.gen
	a.mu.RUnlock()
	b, err := json.MarshalIndent(st, "", " ")
	return append(b, '\n'), gen, err
}

// storeWriter writes the store file, outside the server's lock. A change
// that must last before it is answered is written at once, or by the
// write in progress, or by the next one, which every change waiting by
// then shares (a group commit); a registration only marks the state
// dirty, and one writer, started when needed and gone when nothing is
// left to write, writes it at most once per storeFlushInterval. Every
// write replaces the whole file atomically, so the file on disk is always
// one whole state.
type storeWriter struct {
	a     *AuthorizationServer
	path  string
	after func(time.Duration) <-chan time.Time
	stop  chan struct{} // closed by close: the batched writer ends
	wg    sync.WaitGroup

	mu      sync.Mutex
	idle    *sync.Cond // signalled when a write ends
	writing bool
	saved   uint64    // the generation on disk
	want    uint64    // the newest generation a registration asked for
	last    time.Time // when the last write ended
	batch   bool      // the batched writer runs
	closed  bool
	writes  int // files written (tests count them)
}

func newStoreWriter(a *AuthorizationServer, path string, after func(time.Duration) <-chan time.Time) *storeWriter {
	w := &storeWriter{a: a, path: path, after: after, stop: make(chan struct{})}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// soon asks for gen to be written by the batched writer.
func (w *storeWriter) soon(gen uint64) {
	w.mu.Lock()
	w.want = max(w.want, gen)
	if w.closed {
		w.mu.Unlock()
		_ = w.flush(gen)
		return
	}
	start := !w.batch
	w.batch = true
	if start {
		w.wg.Add(1)
	}
	w.mu.Unlock()
	if start {
		go w.batched()
	}
}

// batched writes what registrations changed, at most once per
// storeFlushInterval, until nothing is left to write or the writer is
// closed. A failed write ends it too (the error is logged); the next
// change starts it again.
func (w *storeWriter) batched() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		if w.saved >= w.want || w.closed {
			w.batch = false
			w.mu.Unlock()
			return
		}
		wait := w.last.Add(storeFlushInterval).Sub(w.a.now())
		w.mu.Unlock()
		if wait > 0 {
			select {
			case <-w.after(wait):
			case <-w.stop:
				continue // closed: close writes the rest
			}
		}
		if w.flush(w.wanted()) != nil {
			w.mu.Lock()
			w.batch = false
			w.mu.Unlock()
			return
		}
	}
}

func (w *storeWriter) wanted() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.want
}

// flush returns once generation gen is on disk: written by the write in
// progress, or by a write it makes itself.
func (w *storeWriter) flush(gen uint64) error {
	w.mu.Lock()
	for w.writing {
		w.idle.Wait()
	}
	if w.saved >= gen {
		w.mu.Unlock()
		return nil
	}
	w.writing = true
	w.mu.Unlock()

	b, got, err := w.a.encode()
	if err == nil {
		err = writeFileAtomic(w.path, b)
	}

	w.mu.Lock()
	w.writing = false
	w.last = w.a.now()
	if err == nil {
		w.saved = max(w.saved, got)
		w.writes++
	}
	w.idle.Broadcast()
	w.mu.Unlock()
	if err != nil {
		w.a.log.Error("oauth: cannot write the token store; sign-ins will not survive a restart until it can be written", "path", w.path, "err", err)
	}
	return err
}

// close ends the batched writer and writes what it had not.
func (w *storeWriter) close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
	return w.flush(w.wanted())
}

// written returns how many times the file was written.
func (w *storeWriter) written() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// writeFileAtomic replaces path with b: a 0600 temporary file in the same
// directory, synced, renamed over path, and the directory synced.
func writeFileAtomic(path string, b []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err == nil {
		if _, err = f.Write(b); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // not every file system syncs directories
		_ = d.Close()
	}
	return nil
}

// readAll reads a capped request body.
func readAll(r *http.Request) ([]byte, error) {
	return io.ReadAll(r.Body)
}
