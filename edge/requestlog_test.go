package edge

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestRequestLogIsBounded: finished requests older than actors.RequestLogKeep
// leave the request log at start and at every later pass; newer ones and
// running ones stay. Before, the log kept every request's report for
// ever, and an agent's database grew with every call it ran.
func TestRequestLogIsBounded(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "audit.db")
	ctx := context.Background()
	st, err := sqlite.Open(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"old", "recent", "later-old"} {
		if _, _, err := st.BeginRequest(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := st.FinishRequest(ctx, id, []byte(`{"report":"`+id+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	age := func(id string, by time.Duration) {
		t.Helper()
		if _, err := raw.Exec(`UPDATE request_log SET finished_ms = ? WHERE request_id = ?`, time.Now().Add(-by).UnixMilli(), id); err != nil {
			t.Fatal(err)
		}
	}
	age("old", actors.RequestLogKeep+time.Minute)
	age("recent", actors.RequestLogKeep-5*time.Minute)

	a, err := New(Config{AgentID: "pi-r", DataDir: dir, MQTT: MQTTConf{Broker: mqtttest.StartEmbedded(t)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.requestLogPruneEvery = 50 * time.Millisecond
	runAgent(t, a, 10*time.Second)
	ids := func() string {
		return count(t, db, `SELECT group_concat(request_id, ',') FROM (SELECT request_id FROM request_log ORDER BY request_id)`)
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return ids() == "later-old,recent" }, "the old request deleted at start")

	age("later-old", 2*actors.RequestLogKeep)
	testenv.Eventually(t, 10*time.Second, func() bool { return ids() == "recent" }, "a request that grew old deleted by a later pass")
}

// TestReportGoesOutAfterTheClaimEnds: by the time a run's report is
// published, its request_id is no longer claimed, so a copy of the command
// sent on receipt of the report is replayed that report. Before, the claim
// ended only after the publish, and a copy arriving in between was dropped
// as a duplicate of a running request: no second answer ever came (seen in
// CI as TestRedeliveredCommandRunsOnce waiting for its second report).
func TestReportGoesOutAfterTheClaimEnds(t *testing.T) {
	url := mqtttest.StartEmbedded(t)
	skillDir, err := filepath.Abs("../testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tr := filepath.Join(dir, "transcript.json")
	if err := os.WriteFile(tr, []byte(`{"name":"edge","turns":[{"content":"hello"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{AgentID: "pi-c", DataDir: dir, MQTT: MQTTConf{Broker: url}, Skills: SkillConf{Dirs: []string{skillDir}},
		LLM: LLMConf{Config: llm.Config{Endpoint: llm.Endpoint{Provider: "scripted"}, Transcript: tr}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan bool, 16)
	a.beforePublish = func(id string) {
		release, ok := a.claim(id)
		if ok {
			release()
		}
		held <- !ok
	}
	runAgent(t, a, 10*time.Second)
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: url, ClientID: "fake-orchestrator"}, "pi-c")
	for _, tt := range []struct{ name, raw, id string }{
		{"tool run", `{"command":"tool","payload":{"tool":"echo_args","parameters":{"message":"hi"}},"request_id":"c1"}`, "c1"},
		{"tool failing", `{"command":"tool","payload":{"tool":"fail"},"request_id":"c2"}`, "c2"},
		{"payload invalid", `{"command":"tool","payload":{},"request_id":"c3"}`, "c3"},
		{"prompt", `{"command":"prompt","payload":{"prompt":"hi"},"request_id":"c4"}`, "c4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k.Send(tt.raw)
			k.Await(tt.id)
			select {
			case h := <-held:
				if h {
					t.Fatalf("%s was still claimed when its report went out", tt.id)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the report went out without passing beforePublish")
			}
		})
	}
}

// TestReleaseEndsOnlyItsOwnClaim: a run releases its claim before its
// report goes out and again when it returns; by then a copy of the
// command may hold a claim of its own, which the second release must not end.
func TestReleaseEndsOnlyItsOwnClaim(t *testing.T) {
	a := &Agent{inflight: map[string]uint64{}, cmdLog: slog.New(slog.DiscardHandler)}
	first, ok := a.claim("r")
	if !ok {
		t.Fatal("a first claim refused")
	}
	if _, ok := a.claim("r"); ok {
		t.Fatal("a second claim of a held request_id granted")
	}
	first()
	second, ok := a.claim("r")
	if !ok {
		t.Fatal("a claim refused after the first was released")
	}
	first() // the first run returning
	if _, ok := a.claim("r"); ok {
		t.Fatal("the first run's second release ended the copy's claim")
	}
	second()
	if _, ok := a.claim("r"); !ok {
		t.Fatal("a claim refused after every claim was released")
	}
}
