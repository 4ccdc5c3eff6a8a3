package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator"
)

// TestWrongTokenNamesItsSource: a token the node refuses (401) is named by
// where the client took it from: --token-file, $EVOCLAW_TOKEN,
// $EVOCLAW_HTTP_TOKEN or the data directory. Before, each said "is
// --data-dir the node's?", which sent the user to the wrong place when the
// token came from a file or the environment.
func TestWrongTokenNamesItsSource(t *testing.T) {
	const good = "the-nodes-own-token-0123"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+good {
			http.Error(w, `{"error":{"message":"missing or wrong bearer token","type":"authentication_error"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "wrong.token")
	for _, f := range []string{tokenFile, filepath.Join(dir, orchestrator.HTTPTokenFile)} {
		if err := os.WriteFile(f, []byte("not-the-nodes-token-0000\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sources := []string{"--token-file", "$" + envToken, "$" + envHTTPToken, orchestrator.HTTPTokenFile}
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want string // one of sources
	}{
		{"token file", nil, []string{"--token-file", tokenFile}, "--token-file"},
		{envToken, map[string]string{envToken: "wrong-token-from-env-01"}, nil, "$" + envToken},
		{envHTTPToken, map[string]string{envHTTPToken: "wrong-token-from-env-02"}, nil, "$" + envHTTPToken},
		{"data dir", nil, nil, orchestrator.HTTPTokenFile},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, env := range []string{envNode, envToken, envHTTPToken} {
				t.Setenv(env, tt.env[env])
			}
			args := append([]string{"status", "--node", srv.URL, "--data-dir", dir}, tt.args...)
			code, _, errOut := runArgs(args...)
			if code != 1 || !strings.Contains(errOut, "wrong token") || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, want 1 and the token's source %q:\n%s", code, tt.want, errOut)
			}
			for _, other := range sources {
				if other != tt.want && strings.Contains(errOut, other) {
					t.Errorf("names %q, but the token came from %q:\n%s", other, tt.want, errOut)
				}
			}
		})
	}
}
