package broker

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"runtime"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// bcryptWait bounds how long a connection waits for a free password check
// slot before it is refused.
const bcryptWait = 10 * time.Second

// verifier checks passwords. bcrypt is slow on purpose (tens of
// milliseconds on a laptop, hundreds on a Pi), so it
//   - bounds the number of checks running at once (a flood of bad passwords
//     cannot take every core from the broker), and
//   - remembers, per identity, a keyed digest of the last password that
//     passed: a reconnecting agent is checked in microseconds. Only successes
//     are remembered, and the digest covers the stored hash, so a wrong
//     password always pays the full bcrypt cost and a changed or removed
//     password never matches. The key is random per process and the cache
//     lives in memory only.
type verifier struct {
	key  [32]byte      // HMAC key of the cache
	sem  chan struct{} // one token per bcrypt check allowed at once
	wait time.Duration // longest wait for a token before errVerifyBusy

	mu    sync.Mutex                   // guards cache and dummies
	cache map[string][sha256.Size]byte // by identity name
	// dummies holds, by bcrypt cost, a hash of a random password that an
	// unknown name is checked against, so that it costs what a wrong
	// password costs.
	dummies map[int][]byte
}

func newVerifier() *verifier {
	v := &verifier{sem: make(chan struct{}, max(1, runtime.GOMAXPROCS(0))), wait: bcryptWait, cache: map[string][sha256.Size]byte{}, dummies: map[int][]byte{}}
	if _, err := rand.Read(v.key[:]); err != nil {
		panic("broker: no randomness for the password cache key: " + err.Error()) // crypto/rand never fails on Linux
	}
	return v
}

// errVerifyBusy means every password check slot stayed taken for
// verifier.wait: the broker is flooded with logins.
var errVerifyBusy = errors.New("password checks saturated")

// check reports whether password is a's. a may be nil (unknown name): the
// work done is then that of a wrong password at dummyCost, the cost of the
// stored hashes (zero when there are none: nothing to imitate). It fails
// with errVerifyBusy, undecided, when no check slot frees up in time.
func (v *verifier) check(name string, a *account, password []byte, dummyCost int) (bool, error) {
	if a != nil && a.bcrypt == nil {
		got := sha256.Sum256(password)
		return subtle.ConstantTimeCompare(got[:], a.digest[:]) == 1, nil
	}
	if a == nil && dummyCost == 0 {
		return false, nil
	}
	var hash []byte
	if a == nil {
		hash = v.dummyHash(dummyCost)
	} else {
		hash = a.bcrypt
		mac := v.mac(hash, password)
		v.mu.Lock()
		cached, ok := v.cache[name]
		v.mu.Unlock()
		if ok && hmac.Equal(cached[:], mac[:]) {
			return true, nil
		}
	}
	t := time.NewTimer(v.wait)
	defer t.Stop()
	select {
	case v.sem <- struct{}{}:
	case <-t.C:
		return false, errVerifyBusy
	}
	err := bcrypt.CompareHashAndPassword(hash, password)
	<-v.sem
	if err != nil || a == nil {
		return false, nil
	}
	mac := v.mac(hash, password)
	v.mu.Lock()
	v.cache[name] = mac
	v.mu.Unlock()
	return true, nil
}

func (v *verifier) mac(hash, password []byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, v.key[:])
	m.Write(hash)
	m.Write([]byte{0})
	m.Write(password)
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// forget drops cached successes of identities no longer in accts.
func (v *verifier) forget(accts accounts) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for name := range v.cache {
		if _, ok := accts.byName[name]; !ok {
			delete(v.cache, name)
		}
	}
}

// dummyHash returns a bcrypt hash of a random password at cost, made on
// first use so that start-up does not pay for it.
func (v *verifier) dummyHash(cost int) []byte {
	v.mu.Lock()
	h, ok := v.dummies[cost]
	v.mu.Unlock()
	if ok {
		return h
	}
	pw := make([]byte, 16)
	_, _ = rand.Read(pw)
	h, err := bcrypt.GenerateFromPassword(pw, cost)
	if err != nil { // only for a cost out of range, which ParseUsers refuses
		h, _ = bcrypt.GenerateFromPassword(pw, bcrypt.DefaultCost)
	}
	v.mu.Lock()
	v.dummies[cost] = h
	v.mu.Unlock()
	return h
}
