package edge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/skills"
)

// bigOutputSkill writes a skill whose tools print outBytes bytes and note
// each run as a line of runsFile: "big" exits 0, "bigfail" exits 1.
func bigOutputSkill(t *testing.T, outBytes int, runsFile string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "big")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	toml := "[skill]\nname = \"big\"\nversion = \"1.0.0\"\ndescription = \"large output\"\n" +
		"[[tools]]\nname = \"big\"\nbinary = \"bin/big\"\ndescription = \"prints a lot\"\n" +
		"[[tools]]\nname = \"bigfail\"\nbinary = \"bin/bigfail\"\ndescription = \"prints a lot and fails\"\n"
	if err := os.WriteFile(filepath.Join(dir, "skill.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, exit := range map[string]int{"big": 0, "bigfail": 1} {
		script := fmt.Sprintf("#!/bin/sh\necho %s >> %s\nhead -c %d /dev/zero | tr '\\0' x\nexit %d\n", name, runsFile, outBytes, exit)
		if err := os.WriteFile(filepath.Join(dir, "bin", name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Dir(dir)
}

// runs counts the lines of the runs file: how often a tool really ran.
func runs(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// fileBytes is the size of the database with its write-ahead log, if any.
func fileBytes(t *testing.T, db string) int64 {
	t.Helper()
	var n int64
	for _, p := range []string{db, db + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// droppedFields are the fields of a result_dropped answer.
type droppedFields struct {
	Duplicate     bool   `json:"duplicate"`
	ResultDropped bool   `json:"result_dropped"`
	ReportBytes   int64  `json:"report_bytes"`
	ReportSHA256  string `json:"report_sha256"`
}

// TestDuplicatePastTheByteBoundIsNotRunAgain: a tool at a large output
// fills the request log past [tools] request_log_bytes; a redelivery of
// the oldest command, failed or not, is answered result_dropped with the
// first run's status, its output's size and the first report's size and
// hash, and the tool does not run again. The newest is still replayed in
// full, and the database stays near the bound. Before, every report was
// kept for an hour: 60 calls of 200 KB grew the database by 12 MB.
func TestDuplicatePastTheByteBoundIsNotRunAgain(t *testing.T) {
	const (
		outBytes = 200 << 10
		calls    = 60
		bound    = 1 << 20
	)
	url := mqtttest.StartEmbedded(t)
	dir := t.TempDir()
	runsFile := filepath.Join(dir, "runs")
	a, err := New(Config{AgentID: "pi-b", DataDir: dir, MQTT: MQTTConf{Broker: url},
		Skills: SkillConf{Dirs: []string{bigOutputSkill(t, outBytes, runsFile)}},
		Tools:  ToolConf{MaxResultBytes: 256 << 10, RequestLogBytes: bound}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := runAgent(t, a, 10*time.Second)
	raw := &mqtttest.Inbox{}
	rawc := mqtttest.Connect(t, mqttc.Options{BrokerURL: url, ClientID: "raw-reports"})
	if err := rawc.Subscribe(wire.ReportsTopic("pi-b"), 1, raw.Handle); err != nil {
		t.Fatal(err)
	}
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: url, ClientID: "fake-orchestrator"}, "pi-b")
	tools := []string{"big", "bigfail"}
	command := func(i int) (id, cmd string) {
		id = "c-" + strconv.Itoa(i)
		return id, fmt.Sprintf(`{"command":"tool","payload":{"tool":%q,"parameters":{}},"request_id":%q}`, tools[i%2], id)
	}
	first := map[string]wire.ToolResult{}
	for i := range calls {
		id, cmd := command(i)
		res, err := wire.DecodeToolResult(k.Ask(id, cmd))
		if err != nil {
			t.Fatal(err)
		}
		first[id] = res
	}
	if n := runs(t, runsFile); n != calls {
		t.Fatalf("%d runs for %d commands", n, calls)
	}
	db := filepath.Join(dir, "audit.db")

	for i, tt := range []struct {
		name, status string
		errType      wire.ErrorType
	}{
		{"succeeded", wire.StatusSuccess, ""},
		{"failed", wire.StatusError, wire.ErrExecutionFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id, cmd := command(i)
			sent, ok := raw.Find(func(m mqttc.Message) bool { return strings.Contains(string(m.Payload), `"request_id":"`+id+`"`) })
			if !ok {
				t.Fatalf("no report of %s was seen", id)
			}
			k.Send(cmd)
			answer := k.AwaitN(id, 2)[1]
			res, err := wire.DecodeToolResult(answer)
			if err != nil {
				t.Fatal(err)
			}
			// The fields as sent, read apart from the decoder under test.
			var got droppedFields
			if err := json.Unmarshal(answer.Payload, &got); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(sent.Payload)
			want := droppedFields{Duplicate: true, ResultDropped: true, ReportBytes: int64(len(sent.Payload)), ReportSHA256: hex.EncodeToString(sum[:])}
			if got != want || res.Status != tt.status || res.ErrorType != tt.errType || res.Status != first[id].Status {
				t.Fatalf("answer to the redelivered %s: %s %q %+v, want %s %q with %+v", id, res.Status, res.ErrorType, got, tt.status, tt.errType, want)
			}
			if res.ResultBytes != first[id].ResultBytes && res.ResultBytes != int64(outBytes) {
				t.Fatalf("result_bytes %d, the output had %d", res.ResultBytes, outBytes)
			}
			audited := count(t, db, fmt.Sprintf(`SELECT result_bytes FROM tool_calls WHERE request_id = '%s'`, id))
			if strconv.FormatInt(res.ResultBytes, 10) != audited {
				t.Fatalf("result_bytes %d, the audit row has %s", res.ResultBytes, audited)
			}
			// What the model is shown says so, with the size and hash.
			text := skills.FromWire(res)
			shown := text.Text() + text.ErrorText()
			if !strings.Contains(shown, "no longer held") || !strings.Contains(shown, want.ReportSHA256) {
				t.Fatalf("the orchestrator would show %q", shown)
			}
		})
	}
	if n := runs(t, runsFile); n != calls {
		t.Fatalf("%d runs after the redeliveries, want %d: a dropped request ran again", n, calls)
	}
	held, _ := strconv.ParseInt(count(t, db, `SELECT bytes FROM request_log_held`), 10, 64)
	if held > bound {
		t.Fatalf("the request log holds %d bytes of reports, bound %d", held, bound)
	}
	// The newest report is kept whole: its redelivery gets it again.
	id, cmd := command(calls - 1)
	k.Send(cmd)
	rs := k.AwaitN(id, 2)
	if string(rs[1].Payload) != string(rs[0].Payload) {
		t.Fatalf("the newest report was not replayed as it was sent")
	}
	// Closed, the store has copied its log into the database: what is
	// left is what it keeps (the log itself is bounded apart, at 16 MiB).
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if size := fileBytes(t, db); size > 4<<20 {
		t.Fatalf("the database takes %d bytes after %d reports of %d bytes, bound %d", size, calls, outBytes, bound)
	}
}

// TestRequestLogBytesConfig: [tools] request_log_bytes defaults to 64 MiB
// (absent or 0), takes any positive size, and a negative one is an error
// naming the key.
func TestRequestLogBytesConfig(t *testing.T) {
	tests := []struct {
		name, line string
		want       int64
		err        string
	}{
		{"absent", "", sqlite.DefaultRequestLogBytes, ""},
		{"zero", "request_log_bytes = 0\n", sqlite.DefaultRequestLogBytes, ""},
		{"one MiB", "request_log_bytes = 1048576\n", 1 << 20, ""},
		{"negative", "request_log_bytes = -1\n", 0, "tools.request_log_bytes -1 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := loadConfig(t, t.TempDir(), "agent_id = \"a\"\n[tools]\n"+tt.line, tt.err)
			if ok && c.Tools.RequestLogBytes != tt.want {
				t.Fatalf("request_log_bytes %d, want %d", c.Tools.RequestLogBytes, tt.want)
			}
		})
	}
}

// TestDroppedPromptIsNotAnsweredAgain: a prompt's report is kept like a
// tool's; past the bound its redelivery is answered result_dropped as a
// prompt result, and the model is not asked again.
func TestDroppedPromptIsNotAnsweredAgain(t *testing.T) {
	url := mqtttest.StartEmbedded(t)
	dir := t.TempDir()
	tr := filepath.Join(dir, "transcript.json")
	if err := os.WriteFile(tr, []byte(`{"name":"edge","turns":[{"content":"first answer"},{"content":"second answer"},{"content":"a third answer, never wanted"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{AgentID: "pi-p", DataDir: dir, MQTT: MQTTConf{Broker: url}, Tools: ToolConf{RequestLogBytes: 1},
		LLM: LLMConf{Config: llm.Config{Endpoint: llm.Endpoint{Provider: "scripted"}, Transcript: tr}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a, 10*time.Second)
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: url, ClientID: "fake-orchestrator"}, "pi-p")
	prompt := func(id string) string {
		return fmt.Sprintf(`{"command":"prompt","payload":{"prompt":"hi"},"request_id":%q}`, id)
	}
	for _, id := range []string{"p1", "p2"} {
		if p, err := wire.DecodePromptResult(k.Ask(id, prompt(id))); err != nil || p.Status != wire.StatusSuccess {
			t.Fatalf("%s: %+v %v", id, p, err)
		}
	}
	k.Send(prompt("p1"))
	p, err := wire.DecodePromptResult(k.AwaitN("p1", 2)[1])
	if err != nil {
		t.Fatal(err)
	}
	if !p.Duplicate || !p.ResultDropped || p.ReportBytes <= 0 || len(p.ReportSHA256) != 64 || p.Status != wire.StatusSuccess ||
		!strings.Contains(p.Content, "no longer held") || strings.Contains(p.Content, "answer") {
		t.Fatalf("the redelivered prompt was answered %+v", p)
	}
	if n := count(t, filepath.Join(dir, "audit.db"), `SELECT count(*) FROM llm_calls`); n != "2" {
		t.Fatalf("%s model calls for two prompts", n)
	}
}
