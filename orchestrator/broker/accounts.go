package broker

import (
	"crypto/sha256"

	"golang.org/x/crypto/bcrypt"
)

// account is one identity the broker knows: from Options.Users (a plain
// password kept as a SHA-256 digest) or from the users file (a bcrypt hash).
type account struct {
	identity
	bcrypt []byte            // nil for an in-memory user
	digest [sha256.Size]byte // of the password of an in-memory user
	// fingerprint changes whenever the password changes; sessions
	// authenticated by password end when it does.
	fingerprint string
}

// inFile reports whether the identity comes from the users file, the only
// ones a client certificate may name.
func (a *account) inFile() bool { return a.bcrypt != nil }

// accounts is an immutable snapshot of every identity, swapped whole on reload.
type accounts struct {
	byName map[string]*account
	// cost is the highest bcrypt cost of the stored hashes, which unknown
	// names are checked at; zero when there are none.
	cost int
}

// buildAccounts merges the in-memory users with those of the file; a file
// entry named like an in-memory user is skipped, and reported.
func buildAccounts(mem []User, file []FileUser) (accounts, []string) {
	accts := accounts{byName: make(map[string]*account, len(mem)+len(file))}
	for _, u := range mem {
		accts.byName[u.Name] = &account{
			identity:    identity{name: u.Name, role: u.Role},
			digest:      sha256.Sum256([]byte(u.Password)),
			fingerprint: "mem",
		}
	}
	var shadowed []string
	for _, u := range file {
		if _, dup := accts.byName[u.Name]; dup {
			shadowed = append(shadowed, u.Name)
			continue
		}
		accts.byName[u.Name] = &account{identity: identity{name: u.Name, role: u.Role}, bcrypt: []byte(u.Hash), fingerprint: u.Hash}
		if c, err := bcrypt.Cost([]byte(u.Hash)); err == nil && c > accts.cost {
			accts.cost = c
		}
	}
	return accts, shadowed
}
