package broker

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func TestVerifier(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte("right"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	a := &account{identity: identity{name: "alex", role: RoleAgent}, bcrypt: hash, fingerprint: string(hash)}
	v := newVerifier()
	check := func(a *account, pw string) bool {
		t.Helper()
		ok, err := v.check("alex", a, []byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if check(a, "wrong") || !check(a, "right") {
		t.Fatal("bcrypt check gives the wrong answer")
	}
	if len(v.cache) != 1 {
		t.Fatalf("a success is not cached: %d entries", len(v.cache))
	}
	if check(a, "wrong") || !check(a, "right") {
		t.Fatal("cached check gives the wrong answer")
	}
	if check(nil, "right") {
		t.Fatal("unknown name accepted")
	}
	// Rotated password: the cached digest covers the old hash and must not match.
	newHash, _ := bcrypt.GenerateFromPassword([]byte("new"), bcrypt.MinCost)
	rotated := &account{identity: a.identity, bcrypt: newHash}
	if check(rotated, "right") || !check(rotated, "new") {
		t.Fatal("cache outlived a password change")
	}
	v.forget(accounts{byName: map[string]*account{}})
	if len(v.cache) != 0 {
		t.Fatal("forget kept a removed identity's cache entry")
	}

	// Every slot taken: undecided, reported as busy rather than refused.
	v.wait = 20 * time.Millisecond
	for range cap(v.sem) {
		v.sem <- struct{}{}
	}
	if ok, err := v.check("alex", a, []byte("right"), bcrypt.MinCost); ok || !errors.Is(err, errVerifyBusy) {
		t.Fatalf("check with no free slot = %v, %v; want errVerifyBusy", ok, err)
	}
}
