package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// Each status a node answers with says what the user can do about it; a
// 404 names a missing endpoint only when the node said so.
func TestAPIErrorMessages(t *testing.T) {
	tests := []struct {
		status  int
		message string
		want    string
	}{
		{http.StatusUnauthorized, "missing or wrong bearer token", "wrong token"},
		{http.StatusNotFound, "no endpoint GET /v1/nope (see docs/API.md)", "no such endpoint"},
		{http.StatusNotFound, `approval "a-9" not found`, `not found: approval "a-9" not found`},
		{http.StatusServiceUnavailable, "audit: disk full", "not ready: audit: disk full"},
		{http.StatusBadGateway, "llm call failed", "the LLM failed"},
		{418, "teapot", "the node answered 418"},
	}
	for _, tt := range tests {
		got := (&apiError{Status: tt.status, Message: tt.message}).Error()
		if !strings.Contains(got, tt.want) {
			t.Errorf("%d %q: %q, want it to say %q", tt.status, tt.message, got, tt.want)
		}
		if tt.status == http.StatusNotFound && !strings.HasPrefix(tt.message, "no endpoint") && strings.Contains(got, "older evoclaw") {
			t.Errorf("%q blames an older node", got)
		}
	}
}

// The node commands with subcommands refuse to run without one, before
// they look for a node, and say which there are.
func TestNodeCommandsWantASubcommand(t *testing.T) {
	tests := []struct{ cmd, want string }{
		{"jobs", "jobs needs a subcommand: list, add ID, remove ID, pause ID, resume ID, run-now ID, history [ID]"},
		{"approvals", "approvals needs a subcommand: list, approve ID, deny ID"},
	}
	for _, tt := range tests {
		var out, errOut strings.Builder
		if code := run([]string{tt.cmd, "--data-dir", t.TempDir()}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("%s: exit %d, stderr %q, want 2 and %q", tt.cmd, code, errOut.String(), tt.want)
		}
	}
}

// A Retry-After from a node is whole seconds, bounded; anything else is
// none.
func TestRetryAfterOf(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7": 7 * time.Second, " 60 ": time.Minute, "": 0, "-1": 0, "1.5": 0,
		"Wed, 21 Oct 2015 07:28:00 GMT": 0, "99999999": maxRetryAfter, "99999999999999999999": 0,
	} {
		if got := retryAfterOf(in); got != want {
			t.Errorf("retryAfterOf(%q) = %s, want %s", in, got, want)
		}
	}
}

func FuzzRetryAfterOf(f *testing.F) {
	for _, s := range []string{"7", "", "-1", "99999999", "Wed, 21 Oct 2015 07:28:00 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d := retryAfterOf(s); d < 0 || d > maxRetryAfter || d%time.Second != 0 {
			t.Fatalf("retryAfterOf(%q) = %s", s, d)
		}
	})
}
