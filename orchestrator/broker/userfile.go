package broker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/evoclaw/evoclaw/edge/atomicfile"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// UsersFileName is the broker's identity file inside a node's data
// directory, written by `evoclaw agents`.
const UsersFileName = "mqtt-users"

// MaxUsersFileBytes bounds the identity file the broker reads (about
// 60,000 identities).
const MaxUsersFileBytes = 8 << 20

// usersHeader starts every file WriteUsersFile writes.
const usersHeader = "# evoclaw MQTT identities, written by `evoclaw agents`; the broker reloads this file when it changes.\n" +
	"# name role bcrypt-hash created\n"

// ErrUsersFile is matched by every error about the content of an identity
// file.
var ErrUsersFile = errors.New("invalid mqtt users file")

// FileUser is one line of the identity file: an identity, its role and the
// bcrypt hash of its password.
type FileUser struct {
	// Name is the username; for RoleAgent it is the agent id.
	Name string
	// Role decides which topics the identity may use.
	Role Role
	// Hash is the bcrypt hash of the password.
	Hash string
	// Created is when the password was set, in UTC, to the second.
	Created time.Time
}

// ParseUsers parses the content of an identity file. name is used in errors.
// Every line is "name role hash created" (RFC 3339); blank lines and lines
// starting with # are ignored. Errors name the line and field. An agent
// whose name starts with "orchestrator-" is refused: its client id would
// be a node's (see AddUser).
func ParseUsers(name string, b []byte) ([]FileUser, error) {
	if len(b) > MaxUsersFileBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, at most %d", ErrUsersFile, name, len(b), MaxUsersFileBytes)
	}
	var out []FileUser
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxUsersFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(field, msg string) error {
			return fmt.Errorf("%w: %s:%d: %s: %s", ErrUsersFile, name, n, field, msg)
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, bad("line", fmt.Sprintf("%d fields, want 4: name role bcrypt-hash created", len(f)))
		}
		u := FileUser{Name: f[0], Role: Role(f[1]), Hash: f[2]}
		if err := wire.ValidateAgentID(u.Name); err != nil {
			return nil, bad("name", err.Error())
		}
		if prev, dup := seen[u.Name]; dup {
			return nil, bad("name", fmt.Sprintf("%q already defined on line %d", u.Name, prev))
		}
		seen[u.Name] = n
		if !u.Role.Valid() {
			return nil, bad("role", fmt.Sprintf("%q, want %q or %q", f[1], RoleAgent, RoleOrchestrator))
		}
		if u.Role == RoleAgent && strings.HasPrefix(u.Name, reservedAgentPrefix) {
			// Its client id, evoclaw-{name}, is a node's: connected while
			// that node is not (restarting, or reconnecting to a broker it
			// shares), it holds the id and the node is refused.
			return nil, bad("name", fmt.Sprintf("agent %q: agent names starting with %q are reserved, its client id %q is the node %q's; rename the agent or remove the line",
				u.Name, reservedAgentPrefix, "evoclaw-"+u.Name, strings.TrimPrefix(u.Name, reservedAgentPrefix)))
		}
		if _, err := bcrypt.Cost([]byte(u.Hash)); err != nil {
			return nil, bad("bcrypt-hash", err.Error())
		}
		t, err := time.Parse(time.RFC3339, f[3])
		if err != nil {
			return nil, bad("created", "want an RFC 3339 time like 2026-01-02T15:04:05Z")
		}
		u.Created = t.UTC()
		out = append(out, u)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUsersFile, name, err)
	}
	return out, nil
}

// ReadUsersFile reads and parses the identity file at path. A missing file
// is an error matching fs.ErrNotExist.
func ReadUsersFile(path string) ([]FileUser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read mqtt users: %w", err)
	}
	defer f.Close()
	b, err := readBounded(f, MaxUsersFileBytes)
	if err != nil {
		return nil, fmt.Errorf("read mqtt users %s: %w", path, err)
	}
	return ParseUsers(path, b)
}

// FormatUsers renders users in the identity file format.
func FormatUsers(users []FileUser) []byte {
	var b bytes.Buffer
	b.WriteString(usersHeader)
	for _, u := range users {
		fmt.Fprintf(&b, "%s %s %s %s\n", u.Name, u.Role, u.Hash, u.Created.UTC().Format(time.RFC3339))
	}
	return b.Bytes()
}

// WriteUsersFile replaces the identity file at path atomically and durably:
// it writes a temporary file in the same directory with mode 0600, syncs
// it, renames it over path and syncs the directory. A crash leaves either
// the old file or the new one, never a mix.
func WriteUsersFile(path string, users []FileUser) error {
	if err := atomicfile.Write(path, FormatUsers(users), 0o600); err != nil {
		return fmt.Errorf("write mqtt users: %w", err)
	}
	return nil
}

// readBounded reads at most limit bytes and fails if there are more.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrUsersFile, limit)
	}
	return b, nil
}

// isPrivate reports whether no one but the owner may read or write the file.
func isPrivate(fi fs.FileInfo) bool { return fi.Mode().Perm()&0o077 == 0 }
