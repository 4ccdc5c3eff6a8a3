package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
	"github.com/evoclaw/evoclaw/persistence"
)

func TestStatusCommand(t *testing.T) {
	f := newFakeNode(t)
	code, out, errOut := runArgs("status", "--tools", "--data-dir", f.dir)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`node +orch-1 +NOT READY: audit: disk full`),
		regexp.MustCompile(`agents: 1 online, 1 offline`),
		regexp.MustCompile(`garage +offline +heard never +Pi Zero`),
		regexp.MustCompile(`groups: 2\n  sensors +members pi1, garage +1 online: pi1\n +tools: sysinfo\n  cellar +members cellar-\* +none online\n`),
		regexp.MustCompile(`pi1 +online +heard [345]s ago +Pi 4 kitchen\n`),
		// per-agent stats from the node's loop metrics, and from the agent
		regexp.MustCompile(`pi1 +sysinfo +3 +0 +0 +12\.0 +20\n`),
		regexp.MustCompile(`pi1 +disk_usage +0 +0 +0 +- +-\n`),
		regexp.MustCompile(`garage +door +4 +1 +1 +10\.0 +30\n`),
		regexp.MustCompile(`llm: chain, 1 links\n  openai gpt-x cooling, ready again in \d+d\n`),
		regexp.MustCompile(`warm +chain from seq 7 +last prune never`),
		regexp.MustCompile(`cold +lag 10 records +shipped to seq 90 of 100, last never +failing \(3\): cold store gone`),
		regexp.MustCompile(`mqtt: embedded broker tcp://127.0.0.1:1883, connected\nbroker clients: 1\n  evoclaw-pi1 username=pi1 remote=127.0.0.1:5555\n`),
	} {
		if !want.MatchString(out) {
			t.Errorf("status lacks %s", want)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("agent text not made safe: %q", out)
	}
	if t.Failed() {
		t.Logf("status:\n%s", out)
	}

	// without --tools: names only
	code, out, _ = runArgs("status", "--data-dir", f.dir)
	if code != 0 || !strings.Contains(out, "tools: sysinfo, disk_usage") || strings.Contains(out, "avg ms") {
		t.Fatalf("exit %d\n%s", code, out)
	}

	// --json: the node's document, indented
	code, out, _ = runArgs("status", "--json", "--data-dir", f.dir)
	var want bytes.Buffer
	if err := json.Indent(&want, []byte(f.status), "", "  "); err != nil {
		t.Fatal(err)
	}
	if code != 0 || out != want.String()+"\n" {
		t.Fatalf("--json: exit %d\n%s", code, out)
	}

	if code, _, errOut := runArgs("status", "--data-dir", t.TempDir()); code != 1 || !strings.Contains(errOut, "start `evoclaw serve") {
		t.Fatalf("no node: exit %d %s", code, errOut)
	}
	if code, _, _ := runArgs("status", "extra", "--data-dir", f.dir); code != 2 {
		t.Fatalf("an argument: exit %d", code)
	}
}

// A node of today's status API (no readiness, LLM links or broker clients;
// tools as names) prints what it has and leaves the rest out.
func TestStatusOfAnOlderNode(t *testing.T) {
	f := newFakeNode(t)
	f.status = `{"node_id":"n","broker":"tcp://b","agents":[{"id":"pi1","online":true,"capabilities":"","tools":["sysinfo"],"last_seen":"0001-01-01T00:00:00Z"}],
	  "metrics":{"Calls":0,"Tools":{}},"audit":{"Retention":{"LastRun":"0001-01-01T00:00:00Z"},"Cold":null}}`
	code, out, errOut := runArgs("status", "--tools", "--data-dir", f.dir)
	if code != 0 || !strings.Contains(out, "pi1") || !strings.Contains(out, "online") || !strings.Contains(out, "sysinfo") ||
		!strings.Contains(out, "cold  off") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, absent := range []string{"ready", "READY", "llm:", "broker clients", "mqtt", "chat input"} {
		if strings.Contains(out, absent) {
			t.Fatalf("shows %q the node did not send:\n%s", absent, out)
		}
	}
}

// status --json and the JSON of jobs and approvals write the C1 controls
// and bidi overrides an agent, a model or an API client put in a string as
// \u escapes: raw, U+009D...U+009C is an OSC (a clipboard write) to a
// terminal that takes C1 controls, and U+202E turns the line around. The
// JSON reads the same.
func TestJSONOutputEscapesHiddenCharacters(t *testing.T) {
	const caps = "Pi \u009d52;c;cGFzdGU=\u009c kitchen \u202eRTL \U000E0041"
	f := newFakeNode(t)
	b, err := json.Marshal(caps)
	if err != nil {
		t.Fatal(err)
	}
	f.status = `{"node_id":"n","agents":[{"id":"pi1","online":true,"capabilities":` + string(b) + `,"tools":[],"last_seen":"0001-01-01T00:00:00Z"}]}`
	code, out, errOut := runArgs("status", "--json", "--data-dir", f.dir)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	var doc struct {
		Agents []struct{ Capabilities string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Agents) != 1 || doc.Agents[0].Capabilities != caps {
		t.Fatalf("status --json reads %+v (%v):\n%s", doc, err, out)
	}
	var buf bytes.Buffer
	approval := persistence.Approval{ID: "apr-1", Tool: "pi1__bash", Note: caps}
	if err := printJSON(&buf, approval); err != nil {
		t.Fatal(err)
	}
	var back persistence.Approval
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Note != caps {
		t.Fatalf("printJSON reads %+v (%v):\n%s", back, err, buf.String())
	}
	for what, s := range map[string]string{"status --json": out, "printJSON": buf.String()} {
		if i := strings.IndexFunc(s, func(r rune) bool { return r >= 0x80 && r <= 0x9f || r == 0x202e || r == 0xe0041 }); i >= 0 {
			t.Errorf("%s writes %q raw:\n%s", what, []rune(s[i:])[0], s)
		}
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s ago"}, {3 * time.Second, "3s ago"}, {90 * time.Second, "1m ago"}, {3 * time.Hour, "3h ago"},
		{72 * time.Hour, "3d ago"}, {-20 * time.Second, "in 20s"},
	} {
		if got := ago(now.Add(-tc.d), now); got != tc.want {
			t.Errorf("ago(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	if got := ago(time.Time{}, now); got != "never" {
		t.Errorf("zero time: %q", got)
	}
}

// FuzzStatusAndErrors: whatever a node answers, decoding and printing it
// do not panic, and the printed table carries no escape sequence.
func FuzzStatusAndErrors(f *testing.F) {
	f.Add(fakeStatus(time.Now()))
	f.Add(`{"error":{"message":"x","type":"y"},"status":502}`)
	f.Add(`{"error":"old style"}`)
	f.Add(`{"agents":[{"id":"\u001b[2J","tools":["t"],"tool_stats":[{"name":"t","calls":1}]}],"ready":{"ready":true},"llm":{"links":[{"provider":"\u001b[2J"}]}}`)
	f.Fuzz(func(t *testing.T, in string) {
		_ = apiErrorFrom([]byte(in), 500).Error()
		var d statusDoc
		if json.Unmarshal([]byte(in), &d) != nil {
			return
		}
		var out strings.Builder
		printStatus(&out, &d, true, time.Now())
		if strings.ContainsRune(out.String(), 0x1b) {
			t.Fatalf("escape in %q", out.String())
		}
	})
}

// A link whose server does not answer says since when, how, and when it
// was last checked, in local time.
func TestLLMLineNotAnswering(t *testing.T) {
	now := time.Date(2026, 11, 30, 7, 0, 0, 0, time.Local)
	since, checked := now.Add(-90*time.Second), now.Add(-5*time.Second)
	for _, tc := range []struct {
		link orchestrator.LLMLink
		want string
	}{
		{orchestrator.LLMLink{State: "not_answering", Health: resilient.Health{Provider: "openai", Model: "qwen", NotAnsweringSince: since,
			NotAnswering: "connection refused", CheckedAt: checked}},
			"openai qwen not_answering since " + since.Format(time.TimeOnly) + ": connection refused (checked " + checked.Format(time.TimeOnly) + ")"},
		{orchestrator.LLMLink{State: "ok", Health: resilient.Health{Provider: "openai", Model: "qwen"}}, "openai qwen ok"},
	} {
		if got := llmLine(tc.link, now); got != tc.want {
			t.Errorf("llmLine = %q, want %q", got, tc.want)
		}
	}
}

// The chat input budget shows what is left of it and, once clients were
// refused for it, how many, when last and the wait they were told.
func TestStatusChatInput(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		in   orchestrator.ChatInputStatus
		want string
	}{
		{"none refused", orchestrator.ChatInputStatus{MBPerHour: 128, BurstBytes: 32 << 20, AvailableBytes: 31 << 20},
			`\nchat input: 31\.0 of 32\.0 MiB free now \(128 MiB an hour\); no chat refused\n`},
		{"refused", orchestrator.ChatInputStatus{MBPerHour: 1, BurstBytes: 8 << 20, AvailableBytes: 3 << 19, Refused: 4,
			LastRefused: now.Add(-7 * time.Second), LastRetryAfterS: 7211},
			`\nchat input: 1\.5 of 8\.0 MiB free now \(1 MiB an hour\); 4 chats REFUSED \(429\), the last [78]s ago, told to retry in 2h\n`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statusShows(t, map[string]any{"chat_input": tc.in}, tc.want)
		})
	}
}

// A client of the embedded broker without a username (allow_anonymous)
// is said to be anonymous, not shown with an empty "username=".
func TestStatusAnonymousBrokerClient(t *testing.T) {
	statusShows(t, map[string]any{"mqtt": orchestrator.MQTTStatus{URL: "tcp://127.0.0.1:1883", Embedded: true, Connected: true, ClientCount: 2,
		Clients: []broker.ClientInfo{{ID: "evoclaw-pi1", Remote: "127.0.0.1:5555"}, {ID: "evoclaw-pi2", Username: "pi2", Remote: "127.0.0.1:5556"}}}},
		regexp.QuoteMeta("\n  evoclaw-pi1 anonymous remote=127.0.0.1:5555\n  evoclaw-pi2 username=pi2 remote=127.0.0.1:5556\n"))
}

// TestStatusAuditWrites: a failed audit write is FAILING while the node's
// audit check fails; once the check passes again (a full disk with room
// again, before the next write), the line says when it last failed and
// that the next write retries, not FAILING beside "ready".
func TestStatusAuditWrites(t *testing.T) {
	failed := orchestrator.AuditWriteStatus{Failing: true, LastFailure: time.Now().Add(-9 * time.Second),
		LastError: "database or disk is full", FreeBytes: 64 << 20}
	for _, tc := range []struct {
		name    string
		write   orchestrator.AuditWriteStatus
		auditOK bool
		want    string
	}{
		{"ok", orchestrator.AuditWriteStatus{FreeBytes: 64 << 20}, true, `\n  writes +ok +64 MiB free\n`},
		{"failing", failed, false, `\n  writes +FAILING: database or disk is full +64 MiB free\n`},
		{"room again", failed, true, `\n  writes +last failed [0-9]+s ago: database or disk is full \(room again: the next write retries\) +64 MiB free\n`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statusShows(t, map[string]any{"audit_write": tc.write,
				"ready": orchestrator.Readiness{Ready: tc.auditOK, Checks: []orchestrator.ReadyCheck{{Name: orchestrator.CheckAudit, OK: tc.auditOK}}}},
				tc.want)
		})
	}
}

// TestStatusAgentNotRecording: an agent whose online status says its audit
// trail cannot write has NOT RECORDING on its line and why under it, made
// one line (it is the agent's word); an agent that says nothing has
// neither. The line said online and nothing more.
func TestStatusAgentNotRecording(t *testing.T) {
	f := newFakeNode(t)
	f.status = `{"node_id":"n","agents":[
	  {"id":"pi1","online":true,"capabilities":"kitchen","tools":[],"last_seen":"0001-01-01T00:00:00Z","not_recording":"its disk is full: 12 KiB free\n\u001b[2Jx"},
	  {"id":"pi2","online":true,"capabilities":"garage","tools":[],"last_seen":"0001-01-01T00:00:00Z"}]}`
	code, out, errOut := runArgs("status", "--data-dir", f.dir)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "pi1") })
	if i < 0 || i+1 >= len(lines) || !strings.Contains(lines[i], "online, NOT RECORDING") ||
		!strings.Contains(lines[i+1], "not recording: its disk is full: 12 KiB free") || strings.ContainsRune(out, '\x1b') {
		t.Fatalf("pi1's lines do not say it is not recording and why, as one line:\n%s", out)
	}
	if strings.Count(out, "NOT RECORDING") != 1 || strings.Count(out, "not recording:") != 1 {
		t.Fatalf("pi2, which said nothing, is marked too:\n%s", out)
	}
}

// statusShows runs `evoclaw status` against a fake node whose status
// document has fields replaced, and wants the regular expression want to
// match what it prints.
func statusShows(t *testing.T, fields map[string]any, want string) {
	t.Helper()
	f := newFakeNode(t)
	var doc map[string]any
	if err := json.Unmarshal([]byte(f.status), &doc); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	f.status = string(b)
	code, out, errOut := runArgs("status", "--data-dir", f.dir)
	if code != 0 || !regexp.MustCompile(want).MatchString(out) {
		t.Fatalf("exit %d, want %s in:\n%s%s", code, want, out, errOut)
	}
}
