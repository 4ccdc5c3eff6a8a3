package broker

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sys/unix"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// DefaultBcryptCost is the bcrypt cost AddUser uses when given zero. Each
// increment doubles the work of every password check; see docs/SECURITY.md
// for what it costs on a Raspberry Pi.
const DefaultBcryptCost = bcrypt.DefaultCost

// Errors of the identity store.
var (
	// ErrUserExists is returned by AddUser for a name already in the file.
	ErrUserExists = errors.New("mqtt identity already exists")
	// ErrNoSuchUser is returned by RemoveUser for a name not in the file.
	ErrNoSuchUser = errors.New("no such mqtt identity")
)

// reservedAgentPrefix starts no agent name (see AddUser).
const reservedAgentPrefix = "orchestrator-"

// passwordBytes is the entropy of a generated password: 256 bits.
const passwordBytes = 32

// NewPassword returns a random password of 43 URL-safe characters.
func NewPassword() (string, error) {
	b := make([]byte, passwordBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// AddUser creates identity name with role in the file at path (created if
// missing) and returns its new password, which is stored only as a bcrypt
// hash of the given cost (zero: DefaultBcryptCost). With replace, an
// existing identity gets a new password and role; without it, an existing
// name fails with ErrUserExists. Concurrent calls on the same file are
// serialised by a lock file beside it.
func AddUser(path, name string, role Role, cost int, replace bool) (string, error) {
	if err := wire.ValidateAgentID(name); err != nil {
		return "", fmt.Errorf("add mqtt identity: name: %w", err)
	}
	if err := wire.ValidateToolPrefix(name); err != nil {
		return "", fmt.Errorf("add mqtt identity: name %w", err)
	}
	if !role.Valid() {
		return "", fmt.Errorf("add mqtt identity %s: role %q, want %q or %q", name, role, RoleAgent, RoleOrchestrator)
	}
	if role == RoleAgent && strings.HasPrefix(name, reservedAgentPrefix) {
		// An agent's client id is evoclaw-{id}; the node's is
		// evoclaw-orchestrator-{node_id}.
		return "", fmt.Errorf("add mqtt identity %s: agent names starting with %q are reserved: its client id would be an orchestrator's", name, reservedAgentPrefix)
	}
	cost = cmp.Or(cost, DefaultBcryptCost)
	if cost < bcrypt.MinCost || cost > bcrypt.MaxCost {
		return "", fmt.Errorf("add mqtt identity %s: bcrypt cost %d, want %d to %d", name, cost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	password, err := NewPassword()
	if err != nil {
		return "", err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return "", fmt.Errorf("add mqtt identity %s: hash password: %w", name, err)
	}
	err = updateUsers(path, func(users []FileUser) ([]FileUser, error) {
		u := FileUser{Name: name, Role: role, Hash: string(hash), Created: time.Now().UTC().Truncate(time.Second)}
		i := slices.IndexFunc(users, func(x FileUser) bool { return x.Name == name })
		switch {
		case i < 0:
			return append(users, u), nil
		case replace:
			users[i] = u
			return users, nil
		}
		return nil, fmt.Errorf("%w: %s (role %s); pass --rotate to give it a new password", ErrUserExists, name, users[i].Role)
	})
	if err != nil {
		return "", fmt.Errorf("add mqtt identity %s: %w", name, err)
	}
	return password, nil
}

// RemoveUser deletes identity name from the file at path. A running broker
// that reloads the file disconnects its sessions.
func RemoveUser(path, name string) error {
	err := updateUsers(path, func(users []FileUser) ([]FileUser, error) {
		i := slices.IndexFunc(users, func(x FileUser) bool { return x.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("%w: %s", ErrNoSuchUser, name)
		}
		return slices.Delete(users, i, i+1), nil
	})
	if err != nil {
		return fmt.Errorf("remove mqtt identity %s: %w", name, err)
	}
	return nil
}

// updateUsers reads the file under an exclusive lock, applies edit and
// writes the result atomically.
func updateUsers(path string, edit func([]FileUser) ([]FileUser, error)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create directory of the users file: %w", err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	users, err := ReadUsersFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if users, err = edit(users); err != nil {
		return err
	}
	return WriteUsersFile(path, users)
}

// lockFile takes an exclusive advisory lock on path, creating it.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		_ = f.Close()
	}, nil
}
