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
	"time"
)

// The state that lasts, and its file (--token-store). The file holds no
// token or code, only their SHA-256; it is 0600, replaced atomically
// (written to a temporary file in the same directory, synced, renamed over
// it, the directory synced), and loaded at start. Pending authorizations
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

// snapshot returns the state to write, expired entries left out. Called
// with a.mu held.
func (a *AuthorizationServer) snapshot(now time.Time) state {
	st := state{Version: storeVersion}
	for _, c := range a.clients {
		st.Clients = append(st.Clients, c)
	}
	for _, g := range a.grants {
		st.Grants = append(st.Grants, g)
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
		}
	}
	for id, p := range a.pending {
		if !now.Before(p.expires) {
			delete(a.pending, id)
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

// save writes the state to the store, when there is one. Called with a.mu
// held, after every change to what persists; the change stands in memory
// even when the write fails, and the next write carries it.
func (a *AuthorizationServer) save(now time.Time) *OAuthError {
	if a.cfg.StorePath == "" {
		return nil
	}
	b, err := json.MarshalIndent(a.snapshot(now), "", " ")
	if err == nil {
		err = writeFileAtomic(a.cfg.StorePath, append(b, '\n'))
	}
	if err != nil {
		a.log.Error("oauth: cannot write the token store; sign-ins will not survive a restart until it can be written", "path", a.cfg.StorePath, "err", err)
		return errServer("the token store cannot be written")
	}
	return nil
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
