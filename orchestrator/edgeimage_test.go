package orchestrator

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/skills/shipped"
)

// cameraModel calls an agent's camera once, then answers; it keeps the
// requests it got.
type cameraModel struct {
	mu   sync.Mutex
	reqs []llm.Request
}

func (m *cameraModel) Name() string { return "camera-model" }

func (m *cameraModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	if len(m.reqs) == 1 {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "snap", Name: "cam__camera_snapshot", Arguments: json.RawMessage(`{}`)}}}}, nil
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "I see the picture."}}, nil
}

// An image a tool returns on an edge agent crosses MQTT as an image and
// reaches the model as one; both audit rows describe it without its data.
func TestEdgeAgentImageReachesTheModel(t *testing.T) {
	dir := t.TempDir()
	model := &cameraModel{}
	node, err := Start(context.Background(), Config{DataDir: filepath.Join(dir, "orch"),
		Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}}}, Options{Provider: model})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	if _, err := shipped.Install("camera", filepath.Join(dir, "skills")); err != nil {
		t.Fatal(err)
	}
	a, err := edge.New(edge.Config{AgentID: "cam", DataDir: filepath.Join(dir, "edge"), MQTT: edge.MQTTConf{Broker: node.BrokerURL()},
		Skills: edge.SkillConf{Dirs: []string{filepath.Join(dir, "skills")}, Permissions: []string{"hw_read"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := a.Run(actx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := node.WaitForAgents(wctx, 1); err != nil {
		t.Fatal(err)
	}
	ans, err := node.Chat(context.Background(), "camera", "what does the camera see?")
	if err != nil || ans.Text != "I see the picture." {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	model.mu.Lock()
	second := model.reqs[len(model.reqs)-1]
	model.mu.Unlock()
	var image *llm.Part
	for _, m := range second.Messages {
		for i, p := range m.Parts {
			if p.Type == llm.PartImage {
				image = &m.Parts[i]
			}
		}
	}
	if image == nil || image.MIMEType != "image/png" || image.Data == "" {
		t.Fatalf("the model got no image of the snapshot: %+v", second.Messages)
	}
	for name, path := range map[string]string{"orchestrator": node.AuditPath(), "agent": filepath.Join(dir, "edge", "audit.db")} {
		res, err := sqlite.QueryReadOnly(context.Background(), path,
			"SELECT result_excerpt FROM tool_calls WHERE tool LIKE '%camera_snapshot'")
		if err != nil || len(res.Rows) != 1 {
			t.Fatalf("%s audit: %v %v", name, res, err)
		}
		ex, _ := res.Rows[0][0].(string)
		if !strings.Contains(ex, "image/png") || !strings.Contains(ex, "sha256") || strings.Contains(ex, image.Data[:40]) {
			t.Fatalf("%s audit excerpt %q: want the image's type and hash, not its data", name, ex)
		}
	}
}
