package actors

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

func TestDuplicateKey(t *testing.T) {
	for _, tt := range []struct {
		args, key, at string
	}{
		{`{"command":"ls"}`, "", ""},
		{`{"command":"ls","command":"rm -rf /srv"}`, "command", ""},
		{`{"a":{"x":1,"y":2},"b":[{"k":1},{"k":2,"k":3}]}`, "k", ".b[1]"},
		{`{"a":{"x":1,"x":2}}`, "x", ".a"},
		{`{"a":[1,2,{"x":{"y":1,"y":1}}]}`, "y", ".a[2].x"},
		{`{"a":"a","b":"a","c":{"a":1}}`, "", ""}, // a value equal to a key, a key again in another object
		{`[{"x":1},{"x":1}]`, "", ""},
		{`{"":1,"":2}`, "", ""},
		{`{"\u0061":1,"a":2}`, "a", ""}, // the same key, spelled twice
		{`not json`, "", ""},
		{`{"a":1,`, "", ""},
	} {
		key, at, ok := duplicateKey([]byte(tt.args))
		if want := tt.key != "" || tt.args == `{"":1,"":2}`; ok != want || key != tt.key || at != tt.at {
			t.Errorf("%s: duplicateKey = %q at %q (%v), want %q at %q", tt.args, key, at, ok, tt.key, tt.at)
		}
	}
}

// FuzzDuplicateKey: no input makes the scan panic, and JSON that Go
// encodes from a value (every object's keys distinct) has no duplicate.
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":[{"b":1}]}`, `[1,"x",{"y":null}]`, `{"a":{"b":{"c":[]}}}`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		duplicateKey(b)
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		clean, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if key, at, ok := duplicateKey(clean); ok {
			t.Fatalf("%s: duplicate %q at %q in JSON without one", clean, key, at)
		}
	})
}

// TestDuplicateKeysRefusedBeforeTheRun: a call whose arguments hold a key
// twice is refused invalid_params and never reaches its tool, local or an
// agent's (through edge_call's params too), and its audit row says why.
// Before, the tool ran with the last value while the trail's queries and
// the person approving the call read the first.
func TestDuplicateKeysRefusedBeforeTheRun(t *testing.T) {
	obj := map[string]any{"type": "object"}
	var ran, sent testenv.Recorded[string]
	local := &LocalTools{
		List: func() []skills.ToolDef { return []skills.ToolDef{{Name: "bash", Parameters: obj}} },
		Run: func(_ context.Context, _ string, args json.RawMessage, _ int64) skills.Output {
			ran.Add(string(args))
			return skills.Output{Content: []skills.Block{skills.TextBlock("ran")}}
		},
	}
	for _, tt := range []struct {
		name, call string
	}{
		{"a local tool", callTurn("q", "bash", `{"command":"ls","command":"rm -rf /srv"}`)},
		{"an agent's tool through edge_call", callTurn("q", EdgeCallTool, `{"agent_id":"pi-1","action":"echo","params":{"text":"hi","text":"bye"}}`)},
		{"edge_call's own arguments", callTurn("q", EdgeCallTool, `{"agent_id":"pi-2","agent_id":"pi-1","action":"echo","params":{}}`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessTools(t, transcript(tt.call, `{"content":"{{result q}}"}`),
				[]wire.ToolInfo{{Name: "echo", Parameters: obj}}, func(o *ConvOptions) { o.Toolbox = Toolboxes{local, &EdgeToolbox{Edges: o.Edges}} })
			h.edge.onTool = func(cmd wire.Command, _ wire.ToolPayload) { sent.Add(cmd.RequestID) }
			ans := h.chat(t, "go")
			if ans.Err != nil || !strings.Contains(ans.Text, "appears twice") {
				t.Fatalf("answer %+v", ans)
			}
			if n := len(ran.All()) + len(sent.All()); n != 0 {
				t.Fatalf("the call ran %d times: locally %v, on the agent %v", n, ran.All(), sent.All())
			}
			rows := h.audit.All()
			if len(rows) != 1 || rows[0].ErrorType != string(wire.ErrInvalidParams) {
				t.Fatalf("audit rows %+v, want one invalid_params", rows)
			}
		})
	}
}
