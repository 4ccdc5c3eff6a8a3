package actors

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

func manyTools(n int, prefix string) []wire.ToolInfo {
	out := make([]wire.ToolInfo, n)
	for i := range out {
		out[i] = wire.ToolInfo{Name: fmt.Sprintf("%s%05d", prefix, i)}
	}
	return out
}

func TestBoundTools(t *testing.T) {
	huge := wire.ToolInfo{Name: "huge", Parameters: map[string]any{"type": "object", "description": strings.Repeat("x", MaxToolDefBytes)}}
	longDesc := wire.ToolInfo{Name: "long", Description: strings.Repeat("y", MaxToolDefBytes+1)}
	atBound := wire.ToolInfo{Name: "edge", Description: strings.Repeat("z", MaxToolDefBytes-len("edge")-len("null"))}
	for _, tc := range []struct {
		name      string
		in        []wire.ToolInfo
		wantKept  int
		wantFirst string
		wantWhy   string
	}{
		{"none", nil, 0, "", ""},
		{"a few", manyTools(3, "t"), 3, "t00000", ""},
		{"exactly the most", manyTools(MaxAgentTools, "t"), MaxAgentTools, "t00000", ""},
		{"45,000", manyTools(45000, "t"), MaxAgentTools, "t00000", fmt.Sprintf("%d tools beyond the first %d", 45000-MaxAgentTools, MaxAgentTools)},
		{"a huge schema", append([]wire.ToolInfo{huge}, manyTools(2, "t")...), 2, "t00000", "1 tools larger than"},
		{"a huge description", []wire.ToolInfo{longDesc, atBound}, 1, "edge", "1 tools larger than"},
		{"both", append([]wire.ToolInfo{huge, longDesc}, manyTools(MaxAgentTools+5, "t")...), MaxAgentTools, "t00000", "2 tools larger than 16384 bytes and 5 beyond"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, why := boundTools(tc.in)
			if len(kept) != tc.wantKept || (tc.wantKept > 0 && kept[0].Name != tc.wantFirst) {
				t.Fatalf("kept %d tools (first %v), want %d (first %s)", len(kept), kept[:min(1, len(kept))], tc.wantKept, tc.wantFirst)
			}
			if (tc.wantWhy == "") != (why == "") || !strings.Contains(why, tc.wantWhy) {
				t.Fatalf("why %q, want %q", why, tc.wantWhy)
			}
		})
	}
}

// TestAgentToolsListIsBounded: an agent that lists 15,000 tools (825 KB,
// within the 1 MiB a report may take) and one with a 64 KiB schema gets at most MaxAgentTools offered for it, the large
// one left out, so one agent cannot make every chat's request huge.
func TestAgentToolsListIsBounded(t *testing.T) {
	big := wire.ToolInfo{Name: "big", Parameters: map[string]any{"type": "object", "description": strings.Repeat("x", 64<<10)}}
	h := newHarnessTools(t, echoTranscript, append([]wire.ToolInfo{big}, manyTools(15000, "t")...), nil)
	var tools []wire.ToolInfo
	testenv.Eventually(t, 10*time.Second, func() bool {
		tools = h.edges.Catalog().Agents["pi-1"].Tools
		return len(tools) > 0
	}, "the agent's tools are listed")
	if len(tools) != MaxAgentTools || tools[0].Name != "t00000" {
		t.Fatalf("%d tools offered (first %s), want %d from t00000", len(tools), tools[0].Name, MaxAgentTools)
	}
	for _, d := range (&EdgeToolbox{Edges: h.edges}).Defs() {
		if d.Name == "pi-1"+ToolSep+"big" {
			t.Fatal("the tool with a 64 KiB schema is offered")
		}
	}
}

func TestObjectSchema(t *testing.T) {
	props := map[string]any{"path": map[string]any{"type": "string"}}
	fine := map[string]any{"type": "object", "properties": props, "required": []any{"path"}}
	for _, tc := range []struct {
		name    string
		in      map[string]any
		want    string // the schema offered, as JSON
		wantWhy string // why it is left out
	}{
		{"fine", fine, `{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}`, ""},
		{"none", nil, `null`, ""},
		{"empty", map[string]any{}, `null`, ""},
		{"no type", map[string]any{"properties": props}, `{"properties":{"path":{"type":"string"}},"type":"object"}`, ""},
		{"empty list of properties", map[string]any{"type": "object", "properties": []any{}}, `{"properties":{},"type":"object"}`, ""},
		{"null properties", map[string]any{"type": "object", "properties": nil}, `{"properties":{},"type":"object"}`, ""},
		{"null required", map[string]any{"type": "object", "required": nil}, `{"type":"object"}`, ""},
		{"a string", map[string]any{"type": "string"}, "", `type "string"`},
		{"a list of types", map[string]any{"type": []any{"object", "null"}}, "", `type ["object","null"]`},
		{"properties listed", map[string]any{"type": "object", "properties": []any{"path"}}, "", `properties ["path"]`},
		{"required a word", map[string]any{"type": "object", "required": "path"}, "", `required "path"`},
		{"required numbers", map[string]any{"type": "object", "required": []any{1.0}}, "", `required [1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := objectSchema(tc.in)
			if why != tc.wantWhy {
				t.Fatalf("why %q, want %q", why, tc.wantWhy)
			}
			if b, _ := json.Marshal(got); why == "" && string(b) != tc.want {
				t.Fatalf("offered %s, want %s", b, tc.want)
			}
		})
	}
	if _, ok := fine["required"]; !ok || len(fine) != 3 {
		t.Fatal("the agent's schema was changed in place")
	}
	kept, why := boundTools([]wire.ToolInfo{{Name: "s", Parameters: map[string]any{"type": "string"}}, {Name: "ok", Parameters: fine}})
	if len(kept) != 1 || kept[0].Name != "ok" || !strings.Contains(why, `1 tools whose parameters are not an object schema left out: "s" (type "string")`) {
		t.Fatalf("kept %v, why %q", kept, why)
	}
}

// FuzzObjectSchema: whatever an agent lists as a tool's parameters, the
// schema offered is an object schema the model APIs take at the top
// level, and the agent's own schema is never changed.
func FuzzObjectSchema(f *testing.F) {
	for _, s := range []string{`{}`, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{"type":"string"}`, `{"properties":[]}`, `{"required":null}`, `{"type":["object"]}`, `{"properties":{"a":1},"required":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p map[string]any
		if json.Unmarshal(b, &p) != nil {
			return
		}
		before, _ := json.Marshal(p)
		got, why := objectSchema(p)
		if after, _ := json.Marshal(p); string(after) != string(before) {
			t.Fatalf("the agent's schema changed: %s, was %s", after, before)
		}
		if why != "" || got == nil {
			return
		}
		if got["type"] != "object" {
			t.Fatalf("offered type %v", got["type"])
		}
		if v, ok := got["properties"]; ok {
			if _, isObj := v.(map[string]any); !isObj {
				t.Fatalf("offered properties %v", v)
			}
		}
		if v, ok := got["required"]; ok && !isStringList(v) {
			t.Fatalf("offered required %v", v)
		}
	})
}
