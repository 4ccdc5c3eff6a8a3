package orchestrator

import (
	"net/http"
	"testing"
)

// TestAuthSchemeIsCaseInsensitive: the Bearer scheme matches in any case
// (RFC 7235), the token does not, and anything else is 401.
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
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("Authorization %q: status %d, want %d", tt.header, resp.StatusCode, tt.status)
		}
		if tt.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: 401 without WWW-Authenticate", tt.header)
		}
	}
}
