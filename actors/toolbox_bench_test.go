package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// BenchmarkToolDefsRequestBytes reports the bytes of the tool definitions
// sent with every completion, for a fleet of 10 agents with 8 tools each
// (3 parameters per tool), in each tool-selection mode. Run:
//
//	go test -run '^$' -bench ToolDefsRequestBytes ./actors
func BenchmarkToolDefsRequestBytes(b *testing.B) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	edges, err := SpawnEdges(sys.Root, EdgeOptions{Publisher: PublisherFunc(func(_ context.Context, _ string, _ []byte) error { return nil })})
	if err != nil {
		b.Fatal(err)
	}
	var tools []wire.ToolInfo
	for i := range 8 {
		tools = append(tools, wire.ToolInfo{Name: fmt.Sprintf("tool_%d", i), Description: "Reads a value from the device and reports it with units and a timestamp",
			Parameters: map[string]any{"type": "object", "required": []any{"path"}, "properties": map[string]any{
				"path":   map[string]any{"type": "string", "description": "which value to read"},
				"format": map[string]any{"type": "string", "description": "output format: text or json"},
				"limit":  map[string]any{"type": "integer", "description": "at most this many samples"},
			}}})
	}
	for i := range 10 {
		id := fmt.Sprintf("pi-%02d", i)
		edges.cat.store(AgentInfo{ID: id, Online: true, Capabilities: "Raspberry Pi sensor node: temperature, CPU/disk stats", Tools: tools, LastSeen: time.Now()})
	}
	modes := []struct {
		name string
		box  *EdgeToolbox
	}{
		{"direct", &EdgeToolbox{Edges: edges}},
		{"selected_2_of_8", &EdgeToolbox{Edges: edges, Select: selectAll(10, "tool_0", "tool_1")}},
		{"compact", &EdgeToolbox{Edges: edges, Mode: ToolsCompact}},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				raw, err := json.Marshal(m.box.Defs())
				if err != nil {
					b.Fatal(err)
				}
				n = len(raw)
			}
			b.ReportMetric(float64(n), "request-bytes")
		})
	}
}

func selectAll(agents int, names ...string) map[string][]string {
	m := map[string][]string{}
	for i := range agents {
		m[fmt.Sprintf("pi-%02d", i)] = names
	}
	return m
}
