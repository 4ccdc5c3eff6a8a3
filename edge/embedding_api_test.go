package edge_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/actors/loop"
	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// provider pins llm.Provider's method set: a method added to the
// interface breaks every embedder's provider, and this test.
type provider struct{}

func (provider) Name() string { return "pinned" }
func (provider) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, nil
}

// embeddingAPI is the stable embedding API of docs/EMBEDDING.md ("What is
// stable"), each name with a compile-time use that pins its signature or
// the fields the guide uses: renaming one, or changing a signature, fails
// to compile this test. TestEmbeddingAPIDocumented keeps the list and the
// page equal.
var embeddingAPI = map[string]any{
	"edge.New":        (func(edge.Config, *slog.Logger) (*edge.Agent, error))(edge.New),
	"edge.LoadConfig": (func(string) (edge.Config, error))(edge.LoadConfig),
	"edge.Config": edge.Config{AgentID: "garage", DataDir: "/var/lib/garage-agent",
		MQTT:   edge.MQTTConf{Broker: "tls://hub.lan:8883", Username: "garage", PasswordEnv: "GARAGE_MQTT_PASSWORD"},
		Skills: edge.SkillConf{Permissions: []string{"hw_read"}}},
	"edge.MQTTConf":        edge.MQTTConf{},
	"edge.SkillConf":       edge.SkillConf{},
	"edge.Agent":           (*edge.Agent)(nil),
	"edge.Agent.AddTools":  (func(*edge.Agent, ...skills.GoTool) error)((*edge.Agent).AddTools),
	"edge.Agent.Run":       (func(*edge.Agent, context.Context) error)((*edge.Agent).Run),
	"edge.Agent.ToolNames": (func(*edge.Agent) []string)((*edge.Agent).ToolNames),

	"orchestrator.Start":      (func(context.Context, orchestrator.Config, orchestrator.Options) (*orchestrator.Node, error))(orchestrator.Start),
	"orchestrator.LoadConfig": (func(string) (orchestrator.Config, error))(orchestrator.LoadConfig),
	"orchestrator.Config":     orchestrator.Config{},
	"orchestrator.Options":    orchestrator.Options{Provider: provider{}, Logger: slog.Default()},
	"orchestrator.Node":       (*orchestrator.Node)(nil),
	"orchestrator.Node.Chat":  (func(*orchestrator.Node, context.Context, string, string) (*actors.Answer, error))((*orchestrator.Node).Chat),
	"orchestrator.Node.Converse": (func(*orchestrator.Node, context.Context, orchestrator.ChatInput) (*actors.Answer, error))(
		(*orchestrator.Node).Converse),
	"orchestrator.Node.Close":  (func(*orchestrator.Node) error)((*orchestrator.Node).Close),
	"orchestrator.Node.Status": (func(*orchestrator.Node) orchestrator.Status)((*orchestrator.Node).Status),
	"orchestrator.Node.Ready":  (func(*orchestrator.Node) orchestrator.Readiness)((*orchestrator.Node).Ready),
	"orchestrator.ChatInput": orchestrator.ChatInput{ConversationID: "c", Text: "t", System: "s", MaxTokens: 1,
		Progress: actors.ProgressFunc(func(actors.Progress) {})},
	"orchestrator.Status":    orchestrator.Status{},
	"orchestrator.Readiness": orchestrator.Readiness{},

	"skills.GoTool": skills.GoTool{
		Tool: skills.Tool{Name: "door_state", Description: "d", Permissions: []string{"hw_read"}, TimeoutMS: 2000,
			Parameters: skills.Parameters{}},
		Schema: map[string]any{},
		Run:    func(context.Context, map[string]any) skills.Output { return skills.Output{Content: []skills.Block{}} },
	},
	"skills.Tool":       skills.Tool{},
	"skills.Parameters": skills.Parameters{},
	"skills.Output":     skills.Output{},
	"skills.Block":      skills.Block{},
	"skills.TextBlock":  (func(string) skills.Block)(skills.TextBlock),
	"skills.ImageBlock": (func(string, string) skills.Block)(skills.ImageBlock),
	"skills.Failed":     (func(wire.ErrorType, string) skills.Output)(skills.Failed),

	"loop.New":                   (func(loop.Rules) *loop.Machine)(loop.New),
	"loop.Rules":                 loop.Rules{MaxIterations: 1, ToolErrorLimit: 1, MaxIdenticalCalls: 1, MaxParallel: 1, OnLimit: loop.OnLimitAnswer},
	"loop.OnLimitAnswer":         loop.OnLimitAnswer,
	"loop.OnLimitError":          loop.OnLimitError,
	"loop.Machine":               (*loop.Machine)(nil),
	"loop.Machine.Start":         (func(*loop.Machine) []loop.Effect)((*loop.Machine).Start),
	"loop.Machine.ModelAnswered": (func(*loop.Machine, llm.Message) []loop.Effect)((*loop.Machine).ModelAnswered),
	"loop.Machine.ModelFailed":   (func(*loop.Machine, error) []loop.Effect)((*loop.Machine).ModelFailed),
	"loop.Machine.CallEnded":     (func(*loop.Machine, int, loop.CallResult) []loop.Effect)((*loop.Machine).CallEnded),
	"loop.Machine.Cancel":        (func(*loop.Machine) []loop.Effect)((*loop.Machine).Cancel),
	"loop.Machine.Awaiting":      (func(*loop.Machine, int) bool)((*loop.Machine).Awaiting),
	"loop.Machine.Calls":         (func(*loop.Machine) []loop.CallSummary)((*loop.Machine).Calls),
	"loop.Machine.Iterations":    (func(*loop.Machine) int)((*loop.Machine).Iterations),
	"loop.Machine.ToolCalls":     (func(*loop.Machine) int)((*loop.Machine).ToolCalls),
	"loop.Machine.Limit":         (func(*loop.Machine) error)((*loop.Machine).Limit),
	"loop.Effect":                []loop.Effect{loop.AskModel{}, loop.RunCall{}, loop.Record{}, loop.BatchEnded{}, loop.Finish{}},
	"loop.AskModel":              loop.AskModel{Tools: true},
	"loop.RunCall":               loop.RunCall{Index: 0},
	"loop.Record":                loop.Record{Messages: []llm.Message{}},
	"loop.BatchEnded":            loop.BatchEnded{Calls: 1},
	"loop.Finish":                loop.Finish{Text: "t"},
	"loop.CallResult":            loop.CallResult{Message: llm.Message{}, Failed: false, Summary: loop.CallSummary{}},
	"loop.CallSummary":           loop.CallSummary{Tool: "t", Success: true},
	"loop.Signature":             (func(string, json.RawMessage) string)(loop.Signature),
	"loop.ErrMaxIterations":      loop.ErrMaxIterations,
	"loop.ErrToolErrorLimit":     loop.ErrToolErrorLimit,
	"loop.ErrRepeatedToolCall":   loop.ErrRepeatedToolCall,
	"loop.ErrCanceled":           loop.ErrCanceled,
	"loop.ErrAudit":              loop.ErrAudit,

	"llm.Provider":        llm.Provider(provider{}),
	"llm.Request":         llm.Request{},
	"llm.Sampling":        llm.Request{Sampling: llm.Sampling{}}.Sampling,
	"llm.Response":        llm.Response{},
	"llm.Message":         llm.Message{Role: llm.RoleTool, Content: "c", ToolCalls: []llm.ToolCall{}},
	"llm.ToolCall":        llm.ToolCall{ID: "c1", Name: "n", Arguments: json.RawMessage(`{}`)},
	"wire.ErrorType":      wire.ErrorType(""),
	"actors.ProgressFunc": actors.ProgressFunc(nil),
	"actors.Progress":     actors.Progress{},
	"actors.Answer":       actors.Answer{},
}

// TestEmbeddingAPIDocumented checks that the names docs/EMBEDDING.md
// promises under "What is stable" are exactly those pinned above: a name
// promised there and not pinned, or pinned and not promised, fails.
func TestEmbeddingAPIDocumented(t *testing.T) {
	page, err := os.ReadFile("../docs/EMBEDDING.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## What is stable\n")
	if !ok {
		t.Fatal(`docs/EMBEDDING.md has no "## What is stable" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	promised := map[string]bool{}
	for _, m := range regexp.MustCompile("`((?:edge|orchestrator|skills|loop|llm|wire|actors)(?:\\.[A-Z][A-Za-z0-9]*)+)`").FindAllStringSubmatch(section, -1) {
		promised[m[1]] = true
	}
	if len(promised) == 0 {
		t.Fatal(`"What is stable" names nothing`)
	}
	var missing, unpinned []string
	for name := range embeddingAPI {
		if !promised[name] {
			missing = append(missing, name)
		}
	}
	for name := range promised {
		if _, ok := embeddingAPI[name]; !ok {
			unpinned = append(unpinned, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(unpinned)
	if len(missing) > 0 {
		t.Errorf("pinned here but not promised in docs/EMBEDDING.md: %v", missing)
	}
	if len(unpinned) > 0 {
		t.Errorf("promised in docs/EMBEDDING.md but not pinned here: %v", unpinned)
	}
	for name, use := range embeddingAPI {
		if use == nil {
			t.Errorf("%s has no use", name)
		}
	}
}
