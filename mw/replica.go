package mw

import (
	"crypto/rand"
	"fmt"
)

// MaxReplicaIDLen bounds a replica id (see [CheckReplicaID]).
const MaxReplicaIDLen = 63

// CheckReplicaID reports whether id can name a replica in session ids
// ([ReplicaSessionIDs]): 1 to MaxReplicaIDLen ASCII letters, digits, '-'
// or '_' — visible ASCII that a session id can carry unescaped both in the
// Mcp-Session-Id header and in the URL of an HTTP+SSE session, without
// '.', which separates the replica id from the random part of a session
// id. A Kubernetes pod name qualifies. The error is one line and names
// the rule.
func CheckReplicaID(id string) error {
	if id == "" || len(id) > MaxReplicaIDLen {
		return fmt.Errorf("a replica id is 1 to %d characters, got %d", MaxReplicaIDLen, len(id))
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("a replica id is ASCII letters, digits, '-' and '_' (no '.'), got %q", id)
		}
	}
	return nil
}

// ReplicaSessionIDs returns a session id minter for
// [SessionsOptions].NewID (and the HTTP+SSE transport's) that names the
// replica: replica + "." + 128 random bits as 26 characters of base32,
// visible ASCII throughout, so that a proxy can route a session's
// requests on the part before the first '.'. replica must pass
// [CheckReplicaID]. A session id naming another replica is, here, an
// id this process never issued: it gets 404 like any unknown id.
func ReplicaSessionIDs(replica string) func() string {
	return func() string { return replica + "." + rand.Text() }
}

// SessionReplica returns the replica id a session id names (the part
// before its first '.'), or "" when it names none.
func SessionReplica(id string) string {
	for i := 0; i < len(id); i++ {
		if id[i] == '.' {
			return id[:i]
		}
	}
	return ""
}
