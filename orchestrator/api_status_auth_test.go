package orchestrator

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAuthSchemeIsCaseInsensitive: the Bearer scheme matches in any case
// (RFC 7235), the token does not, and anything else is 401 with
// WWW-Authenticate and OpenAI's code for a refused key, invalid_api_key
// (it was null).
func TestAuthSchemeIsCaseInsensitive(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: failing(nil)})
	for _, tt := range []struct {
		header string
		status int
	}{
		{"Bearer " + token, 200},
		{"bearer " + token, 200},
		{"BEARER " + token, 200},
		{"bEaReR " + token, 200},
		{"Bearer  " + token, 200}, // 1*SP
		{"Bearer", 401},
		{"Bearer" + token, 401},
		{"Basic " + token, 401},
		{"Bearers " + token, 401},
		{"bearer " + token + "x", 401},
		{"bearer " + token[:len(token)-1], 401},
		{"", 401},
	} {
		req, err := http.NewRequest("GET", base+"/v1/models", nil)
		if err != nil {
			t.Fatal(err)
		}
		if tt.header != "" {
			req.Header.Set("Authorization", tt.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tt.status {
			resp.Body.Close()
			t.Errorf("Authorization %q: status %d, want %d", tt.header, resp.StatusCode, tt.status)
			continue
		}
		if tt.status != 401 {
			resp.Body.Close()
			continue
		}
		var e errorBody
		decodeBody(t, resp, &e)
		if resp.Header.Get("WWW-Authenticate") == "" || e.Error.Type != ErrTypeAuth || e.Error.Code == nil || *e.Error.Code != CodeInvalidAPIKey {
			t.Errorf("Authorization %q: 401 with WWW-Authenticate %q, error %+v: want both, type %s, code %s",
				tt.header, resp.Header.Get("WWW-Authenticate"), e.Error, ErrTypeAuth, CodeInvalidAPIKey)
		}
	}
}

// TestAuthFailuresPerAddress: an address past loopback that sent
// authFailureBurst wrong tokens is answered 429 with Retry-After, the
// right token included, until its budget refills; other addresses are
// not touched, an IPv6 /64 counts as one address, and loopback clients
// are never held back.
func TestAuthFailuresPerAddress(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	a := &httpAPI{token: "right-token-of-16+", failed: newAuthFailures(), now: func() time.Time { return clock }}
	h := a.auth(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	call := func(remote, token string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest("GET", "/v1/models", nil)
		r.RemoteAddr = remote
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h(w, r)
		return w
	}
	const attacker, other = "192.0.2.7:40000", "192.0.2.8:40000"
	for i := range authFailureBurst {
		if w := call(attacker, fmt.Sprint("guess-", i)); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: status %d, want 401", i, w.Code)
		}
	}
	for _, tc := range []struct {
		name, remote, token string
		want                int
	}{
		{"one guess more", attacker, "guess-x", http.StatusTooManyRequests},
		{"the right token from there, unchecked", "192.0.2.7:40001", a.token, http.StatusTooManyRequests},
		{"another address", other, a.token, http.StatusOK},
		{"another address's wrong token", other, "nope", http.StatusUnauthorized},
	} {
		w := call(tc.remote, tc.token)
		if w.Code != tc.want {
			t.Fatalf("%s: status %d, want %d", tc.name, w.Code, tc.want)
		}
		if tc.want == http.StatusTooManyRequests && (w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "too many wrong bearer tokens")) {
			t.Fatalf("%s: 429 without Retry-After or reason: %v %s", tc.name, w.Header(), w.Body)
		}
	}
	clock = clock.Add(authFailureEvery)
	if w := call(attacker, a.token); w.Code != http.StatusOK {
		t.Fatalf("the right token once the budget refilled: status %d", w.Code)
	}
	if w := call(attacker, "guess-y"); w.Code != http.StatusUnauthorized {
		t.Fatalf("a guess with one token of budget: status %d", w.Code)
	}
	if w := call(attacker, "guess-z"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("a guess past the refilled budget: status %d", w.Code)
	}

	// One IPv6 /64 is one address.
	for i := range authFailureBurst {
		call(fmt.Sprintf("[2001:db8:1:2::%x]:443", i+1), "nope")
	}
	if w := call("[2001:db8:1:2:ffff::1]:443", a.token); w.Code != http.StatusTooManyRequests {
		t.Fatalf("another host of the same /64: status %d, want 429", w.Code)
	}
	if w := call("[2001:db8:1:3::1]:443", a.token); w.Code != http.StatusOK {
		t.Fatalf("another /64: status %d, want 200", w.Code)
	}

	// Loopback, IPv4, IPv6 and IPv4-mapped, is never counted.
	for _, lo := range []string{"127.0.0.1:5000", "[::1]:5000", "[::ffff:127.0.0.1]:5000"} {
		for range 3 * authFailureBurst {
			if w := call(lo, "stale-token"); w.Code != http.StatusUnauthorized {
				t.Fatalf("%s: wrong token: status %d, want 401", lo, w.Code)
			}
		}
		if w := call(lo, a.token); w.Code != http.StatusOK {
			t.Fatalf("%s: the right token after many wrong ones: status %d", lo, w.Code)
		}
	}
}
