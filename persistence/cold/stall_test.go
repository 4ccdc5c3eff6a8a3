package cold

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// stallingServer speaks just enough of the libSQL HTTP protocol (v2
// pipeline) for the cold Store: the schema version is missing, every
// statement succeeds, a SELECT of a value answers 1, and a statement that
// starts with hangOn (COMMIT, ROLLBACK) is never answered: the request
// hangs until the client gives up.
func stallingServer(t *testing.T, hangOn string) *httptest.Server {
	release := make(chan struct{}) // ends the hung requests at cleanup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Requests []struct {
				Type  string `json:"type"`
				Stmt  stmt   `json:"stmt"`
				Batch struct {
					Steps []struct {
						Stmt stmt `json:"stmt"`
					} `json:"steps"`
				} `json:"batch"`
			} `json:"requests"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var results []any
		for _, q := range req.Requests {
			switch q.Type {
			case "execute":
				if hangs(q.Stmt.SQL, hangOn) {
					hang(r, release) // never answered
					return
				}
				results = append(results, map[string]any{"type": "ok", "response": map[string]any{"type": "execute", "result": stmtResult(q.Stmt.SQL)}})
			case "batch":
				var steps, errs []any
				for _, st := range q.Batch.Steps {
					if hangs(st.Stmt.SQL, hangOn) {
						hang(r, release)
						return
					}
					steps, errs = append(steps, stmtResult(st.Stmt.SQL)), append(errs, nil)
				}
				results = append(results, map[string]any{"type": "ok", "response": map[string]any{"type": "batch", "result": map[string]any{"step_results": steps, "step_errors": errs}}})
			default:
				results = append(results, map[string]any{"type": "ok", "response": map[string]any{"type": q.Type}})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"baton": "b", "results": results})
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first
	return srv
}

// hang waits until the client gives up on r or the test ends.
func hang(r *http.Request, release chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-release:
	}
}

type stmt struct {
	SQL string `json:"sql"`
}

// hangs says whether the fake server leaves sql unanswered.
func hangs(sql, hangOn string) bool {
	return strings.HasPrefix(strings.ToUpper(strings.TrimSpace(sql)), hangOn)
}

// stmtResult is the fake server's result of sql: one row holding 1 for a
// SELECT (the schema version, the query), none for anything else.
func stmtResult(sql string) map[string]any {
	rows := [][]any{}
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(sql)), "SELECT") {
		rows = append(rows, []any{map[string]any{"type": "integer", "value": "1"}})
	}
	return map[string]any{"cols": []any{map[string]any{"name": "v"}}, "rows": rows, "affected_row_count": 0}
}

// A server that stops answering at the end of a transaction makes the call
// fail after its request timeout, instead of hanging it (and every cold
// call after it) for good: the driver ends its own transactions with no
// deadline.
func TestTransactionEndsAreBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, hangOn string
		call         func(s *Store) error
	}{
		{"schema creation, COMMIT", "COMMIT", func(s *Store) error { return s.EnsureSchema(t.Context()) }},
		{"read-only query, ROLLBACK", "ROLLBACK", func(s *Store) error {
			_, _, err := s.Query(t.Context(), "SELECT 1")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := stallingServer(t, tc.hangOn)
			s, err := Open(Config{URL: srv.URL, RequestTimeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			done := make(chan error, 1)
			go func() { done <- tc.call(s) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
					t.Fatalf("call on a server that stops answering at %s = %v, want a deadline error", tc.hangOn, err)
				}
			case <-time.After(30 * time.Second): // a bound on a hang, not a timing claim
				t.Fatalf("call on a server that stops answering at %s still waits after 30s (request timeout 500ms)", tc.hangOn)
			}
		})
	}
}
