package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/internal/approvals"
	"github.com/evoclaw/evoclaw/orchestrator/jobs"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Jobs over the HTTP API: add, list, run now (a conversation), history,
// pause, resume, remove; a config job cannot be removed.
func TestJobsAPI(t *testing.T) {
	p := mustScript(t, `{"name":"j","turns":[{"content":"all fine"}]}`)
	_, base, token := startAPI(t, func(c *Config) {
		c.Jobs = []jobs.Spec{{ID: "declared", Schedule: "0 6 * * *", Prompt: "check"}}
	}, Options{Provider: p})
	resp := send(t, http.MethodPost, base+"/v1/jobs?by=alice", token, `{"id":"nightly","schedule":"0 3 29 2 *","prompt":"read the meter"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("add: %d", resp.StatusCode)
	}
	resp = send(t, http.MethodPost, base+"/v1/jobs", token, `{"id":"bad","schedule":"61 * * * *","prompt":"x"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad schedule: %d", resp.StatusCode)
	}
	var list JobsPage
	decodeBody(t, send(t, http.MethodGet, base+"/v1/jobs", token, nil), &list)
	if len(list.Jobs) != 2 || list.Jobs[0].ID != "declared" || list.Jobs[1].Source != jobs.SourceAPI {
		t.Fatalf("list %+v", list)
	}
	var started RunsPage
	decodeBody(t, send(t, http.MethodPost, base+"/v1/jobs/nightly/run", token, nil), &started)
	if len(started.Runs) != 1 || started.Runs[0].Trigger != "run_now" {
		t.Fatalf("run now %+v", started)
	}
	var hist RunsPage
	testenv.Eventually(t, 10*time.Second, func() bool {
		decodeBody(t, send(t, http.MethodGet, base+"/v1/runs?job=nightly", token, nil), &hist)
		return len(hist.Runs) == 1 && hist.Runs[0].Outcome != ""
	}, "the run ended")
	if hist.Runs[0].Outcome != "succeeded" || hist.Runs[0].ConversationID == "" {
		t.Fatalf("history %+v", hist)
	}
	var in jobs.Info
	decodeBody(t, send(t, http.MethodPost, base+"/v1/jobs/nightly/pause", token, nil), &in)
	if !in.Paused {
		t.Fatalf("pause %+v", in)
	}
	decodeBody(t, send(t, http.MethodPost, base+"/v1/jobs/nightly/resume", token, nil), &in)
	if in.Paused || in.Next.IsZero() {
		t.Fatalf("resume %+v", in)
	}
	for _, c := range []struct {
		path string
		code int
	}{{"/v1/jobs/declared", http.StatusConflict}, {"/v1/jobs/nightly", http.StatusNoContent}, {"/v1/jobs/nightly", http.StatusNotFound}} {
		resp := send(t, http.MethodDelete, base+c.path, token, nil)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Fatalf("DELETE %s: %d, want %d", c.path, resp.StatusCode, c.code)
		}
	}
}

// TestJobChangesRacingDelete: a POST /v1/jobs that created its job
// answers 201 with it, and a pause that took effect answers 200 with the
// job paused, even when a DELETE removed the job a moment later. Both
// used to read the job back after the change and answer 404 "no such
// job" then (26 of 7,612 adds of a live node under 16 clients adding,
// pausing and deleting three ids).
func TestJobChangesRacingDelete(t *testing.T) {
	node, base, token := startAPI(t, nil, Options{})
	// The clients race until enough adds and pauses took effect, however
	// slow the machine (an emulated ARM CPU ran 48 adds in 3 s).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const enough = 50
	var mu sync.Mutex // guards counts and lostPauses
	counts := map[string]int{}
	var lostPauses []string // ?by= of the pauses answered 404
	var seq atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{}
			for ctx.Err() == nil {
				by := fmt.Sprintf("c%d", seq.Add(1))
				method, path, body := http.MethodDelete, base+"/v1/jobs/race", ""
				switch w % 4 {
				case 0:
					method, path, body = http.MethodPost, base+"/v1/jobs", `{"id":"race","schedule":"@daily","prompt":"p"}`
				case 1:
					method, path = http.MethodPost, base+"/v1/jobs/race/pause?by="+by
				}
				req, err := http.NewRequestWithContext(ctx, method, path, strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(req)
				if err != nil {
					return // the test's time is up
				}
				var in jobs.Info
				if resp.StatusCode/100 == 2 && method == http.MethodPost {
					if err := json.NewDecoder(resp.Body).Decode(&in); err != nil || in.ID != "race" || (w%4 == 1 && !in.Paused) {
						t.Errorf("%s %s: %d with %+v, %v", method, path, resp.StatusCode, in, err)
					}
				}
				resp.Body.Close()
				mu.Lock()
				counts[fmt.Sprintf("%s %d", map[int]string{0: "add", 1: "pause"}[w%4], resp.StatusCode)]++
				if w%4 == 1 && resp.StatusCode == http.StatusNotFound {
					lostPauses = append(lostPauses, by)
				}
				if counts["add 201"] >= enough && counts["pause 200"] >= enough {
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if counts["add 404"] > 0 || counts["add 201"] < enough || counts["pause 200"] < enough {
		t.Fatalf("answers %v: an add answered 404, or too few ran", counts)
	}
	// A pause answered 404 must not have taken effect (its job_changed event names it).
	lost, _ := json.Marshal(lostPauses) // strings: cannot fail
	res, err := sqlite.QueryReadOnly(context.Background(), node.AuditPath(), `SELECT count(*) FROM events WHERE kind = 'job_changed'
		AND json_extract(detail, '$.change') = 'paused' AND json_extract(detail, '$.by') IN (SELECT value FROM json_each(?))`,
		string(lost))
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Rows[0][0]; n != int64(0) {
		t.Fatalf("%v of %d pauses answered 404 took effect (answers %v)", n, len(lostPauses), counts)
	}
}

// largestWrite records an answer and the largest single write of it.
type largestWrite struct {
	*httptest.ResponseRecorder
	largest int
}

func (w *largestWrite) Write(p []byte) (int, error) {
	w.largest = max(w.largest, len(p))
	return w.ResponseRecorder.Write(p)
}

// TestJobsListWrittenAJobAtATime: GET /v1/jobs answers what writeJSON
// would, but no write holds more than one job: the whole list of 256
// jobs of the largest definition was encoded at once for each request
// (8 MB; 64 requests at once took a node to 540 MB).
func TestJobsListWrittenAJobAtATime(t *testing.T) {
	node, base, token := startAPI(t, nil, Options{})
	none := httptest.NewRecorder()
	node.handleJobs(none, httptest.NewRequest(http.MethodGet, "/v1/jobs", nil))
	if got := none.Body.String(); got != "{\"jobs\":[]}\n" {
		t.Fatalf("no jobs: %q", got)
	}
	big := map[string]any{"schedule": "0 0 1 1 *", "prompt": strings.Repeat("p", jobs.MaxPrompt)}
	var agents, tools []string
	for i := range jobs.MaxAgents {
		agents = append(agents, fmt.Sprintf("agent-%02d-%s", i, strings.Repeat("a", 39)))
	}
	for i := range jobs.MaxTools {
		tools = append(tools, fmt.Sprintf("tool-%02d-%s", i, strings.Repeat("t", 192)))
	}
	big["agents"], big["tools"] = agents, tools
	const n = 12
	for i := range n {
		big["id"] = fmt.Sprintf("big-%02d", i)
		resp := send(t, http.MethodPost, base+"/v1/jobs", token, big)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("add %s: %d", big["id"], resp.StatusCode)
		}
	}
	list := node.sched.List()
	one, err := json.Marshal(list[0])
	if err != nil {
		t.Fatal(err)
	}
	whole := httptest.NewRecorder()
	writeJSON(whole, http.StatusOK, JobsPage{Jobs: list})
	w := &largestWrite{ResponseRecorder: httptest.NewRecorder()}
	node.handleJobs(w, httptest.NewRequest(http.MethodGet, "/v1/jobs", nil))
	if w.Code != http.StatusOK || w.Body.String() != whole.Body.String() {
		t.Fatalf("answer %d of %d bytes differs from writeJSON's %d bytes", w.Code, w.Body.Len(), whole.Body.Len())
	}
	if w.largest > len(one)+64 {
		t.Fatalf("a write of %d bytes; one job is %d, the list %d", w.largest, len(one), whole.Body.Len())
	}
}

// Decision bodies come from the network: never a panic, and what decodes
// names a decider.
func FuzzDecodeDecision(f *testing.F) {
	f.Add([]byte(`{"by":"alice","note":"ok"}`))
	f.Add([]byte(`{"by":""}`))
	f.Add([]byte(`{"by":"a"} x`))
	f.Add([]byte(`{"by":" restart "}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDecision(b)
		if err == nil && (d.By == "" || len(d.By) > 64 || approvals.NodeDecides(d.By)) {
			t.Fatalf("accepted %q", b)
		}
	})
}

// With [scheduler] model_tool the model creates a job with schedule_task;
// it is listed with source "model".
func TestScheduleTaskTool(t *testing.T) {
	p := mustScript(t, `{"name":"m","turns":[
	 {"content":"","tool_calls":[{"id":"c1","name":"schedule_task","arguments":{"id":"water","schedule":"0 7 * * *","prompt":"water the plants"}}]},
	 {"content":"R={{result c1}}"}]}`)
	node, _, _ := startAPI(t, func(c *Config) { c.Scheduler.ModelTool = true }, Options{Provider: p})
	ans, err := node.Chat(t.Context(), "m", "water the plants every morning")
	if err != nil {
		t.Fatal(err)
	}
	in, err := node.sched.Get("water")
	if err != nil || in.Source != jobs.SourceModel || !strings.Contains(ans.Text, `scheduled "water"`) {
		t.Fatalf("answer %q, job %+v, %v", ans.Text, in, err)
	}
}

// TestUnusableJobOverHTTP: a job stored before a rule that now refuses
// its definition is listed with why, a pause or run of it is 409 naming
// it, and DELETE removes it (then 404); before, it was missing from the
// list and DELETE answered 404, its id taken for good.
func TestUnusableJobOverHTTP(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	spec := []byte(`{"id":"fast","schedule":"TZ=UTC @every 1s","prompt":"poll"}`)
	if _, err := st.PutJob(context.Background(), persistence.JobRecord{ID: "fast", Source: jobs.SourceAPI, Spec: spec,
		Created: now, Updated: now, Watermark: now}, "orchestrator", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_, base, token := startAPI(t, func(c *Config) { c.DataDir = dir }, Options{})
	var list JobsPage
	decodeBody(t, send(t, http.MethodGet, base+"/v1/jobs", token, nil), &list)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != "fast" || !strings.Contains(list.Jobs[0].Error, "@every") {
		t.Fatalf("list %+v, want the stored job with why it cannot run", list)
	}
	for _, c := range []struct {
		method, path string
		code         int
		says         string
	}{
		{http.MethodPost, "/v1/jobs/fast/pause", http.StatusConflict, "cannot be scheduled"},
		{http.MethodPost, "/v1/jobs/fast/run", http.StatusConflict, "cannot be scheduled"},
		{http.MethodPost, "/v1/jobs", http.StatusConflict, "remove it first"},
		{http.MethodDelete, "/v1/jobs/fast", http.StatusNoContent, ""},
		{http.MethodDelete, "/v1/jobs/fast", http.StatusNotFound, "no such job"},
	} {
		var body any
		if c.path == "/v1/jobs" {
			body = `{"id":"fast","schedule":"@every 1m","prompt":"poll"}`
		}
		resp := send(t, c.method, base+c.path, token, body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.says) {
			t.Fatalf("%s %s: %d %s, want %d saying %q", c.method, c.path, resp.StatusCode, b, c.code, c.says)
		}
	}
}
