package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator"
)

// TestAuditSQLCannotTakeTheNodesMemory: statements over POST /v1/audit/sql
// that would need gigabytes (one huge value; a row of many values, each
// within the value bound) are refused with 400 and a reason, and the
// node's own memory stays where it was; the node answers the next
// statement. Before statements ran in a child under a memory bound, the
// first took the node to 3 GB of private memory, which it kept.
func TestAuditSQLCannotTakeTheNodesMemory(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "node")
	serve, _ := startScriptedServeProc(t, dir, "auditsql-test", `{"name":"a","turns":[{"content":"hi"}]}`, "")
	base := strings.TrimSpace(readTestFile(t, filepath.Join(data, orchestrator.HTTPAddrFile)))
	token := strings.TrimSpace(readTestFile(t, filepath.Join(data, orchestrator.HTTPTokenFile)))
	before, err := readMem(serve.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	wide := "SELECT " + strings.TrimSuffix(strings.Repeat("zeroblob(16000000), ", 200), ", ")
	for _, tc := range []struct {
		name, sql, why string
	}{
		{"one huge value", "SELECT zeroblob(1000000000)", "larger than"},
		{"one huge text", "SELECT printf('%.*c', 900000000, 'x')", "larger than"},
		{"a row of 3 GB", wide, "memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out struct {
				Error orchestrator.APIError `json:"error"`
			}
			req, err := http.NewRequest("POST", base+"/v1/audit/sql", strings.NewReader(fmt.Sprintf(`{"sql":%q}`, tc.sql)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
			code := resp.StatusCode
			if code != http.StatusBadRequest || out.Error.Type != orchestrator.ErrTypeInvalidRequest || !strings.Contains(out.Error.Message, tc.why) {
				t.Fatalf("answered %d %+v; want 400 %s saying %q", code, out.Error, orchestrator.ErrTypeInvalidRequest, tc.why)
			}
		})
	}
	after, err := readMem(serve.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// The statements needed gigabytes; the node may have grown by its
	// buffers for the answers, not by the statements' values.
	if grew := after.Anon - before.Anon; grew > 32<<10 {
		t.Fatalf("the node's private memory grew from %d to %d kB", before.Anon, after.Anon)
	}
	var res orchestrator.AuditSQLResult
	if code := apiJSON(t, "POST", base+"/v1/audit/sql", token, map[string]any{"sql": "SELECT count(*) FROM tool_calls"}, &res); code != http.StatusOK || fmt.Sprint(res.Rows) != "[[0]]" {
		t.Fatalf("next statement: %d %+v; want 200 [[0]]", code, res)
	}
}
