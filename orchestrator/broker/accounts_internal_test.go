package broker

import (
	"slices"
	"testing"

	"github.com/evoclaw/evoclaw/edge/rate"
)

// The byte-rate limiters of identities that a new users file no longer
// has are dropped with them: over many reloads, the map holds only the
// identities of the current file.
func TestSetAccountsDropsRemovedLimiters(t *testing.T) {
	h := &authHook{verify: newVerifier()}
	for _, name := range []string{"kept", "gone1", "gone2"} {
		h.published.Store(name, rate.New(1, 1))
	}
	h.setAccounts(accounts{byName: map[string]*account{"kept": {identity: identity{name: "kept", role: RoleAgent}}, "new": {identity: identity{name: "new", role: RoleAgent}}}})
	var left []string
	h.published.Range(func(k, _ any) bool {
		left = append(left, k.(string))
		return true
	})
	if !slices.Equal(left, []string{"kept"}) {
		t.Errorf("limiters after removing gone1 and gone2: %v, want [kept]", left)
	}
}
