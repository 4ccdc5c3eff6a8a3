package orchestrator

import (
	"strings"
	"testing"
)

// TestWrongMethodIs405: a known path asked with a method it does not serve
// answers 405 with Allow and the API's error body, not the catch-all's 404;
// an unknown path is still 404.
func TestWrongMethodIs405(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: failing(nil)})
	for _, tt := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/v1/chat/completions", 405, "POST"},
		{"DELETE", "/v1/chat", 405, "POST"},
		{"PUT", "/v1/models", 405, "GET, HEAD"},
		{"POST", "/v1/jobs/x", 405, "GET, HEAD, DELETE"},
		{"PATCH", "/v1/audit/verify", 405, "GET, HEAD, POST"},
		{"POST", "/ui/app.js", 405, "GET, HEAD"},
		{"POST", "/", 405, "GET, HEAD"},
		{"POST", "/healthz", 405, "GET, HEAD"},
		{"GET", "/v1/nothing", 404, ""},
		{"POST", "/nothing", 404, ""},
	} {
		resp := send(t, tt.method, base+tt.path, token, nil)
		var e errorBody
		decodeBody(t, resp, &e)
		if resp.StatusCode != tt.status || resp.Header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d, Allow %q; want %d, Allow %q", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Allow"), tt.status, tt.allow)
			continue
		}
		wantType := ErrTypeNotFound
		if tt.status == 405 {
			wantType = ErrTypeInvalidRequest
		}
		if e.Error.Type != wantType || !strings.Contains(e.Error.Message, tt.path) {
			t.Errorf("%s %s: error %+v", tt.method, tt.path, e.Error)
		}
	}
}
