package edge

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
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
