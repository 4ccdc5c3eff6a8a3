package orchestrator

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// An image a tool returns on an edge agent crosses MQTT as an image and
// reaches the model as one; both audit rows describe it without its data.
func TestEdgeAgentImageReachesTheModel(t *testing.T) {
	dir := t.TempDir()
	// The model calls the agent's camera once, then answers.
	model := &recorder{next: mustScript(t, `{"name":"camera-model","turns":[
	  {"content":"","tool_calls":[{"id":"snap","name":"cam__camera_snapshot","arguments":{}}]},
	  {"content":"I see the picture."}]}`)}
	node := startNode(t, Config{DataDir: filepath.Join(dir, "orch"),
		Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}}}, Options{Provider: model})
	startAgent(t, node, dir, testAgent{ID: "cam", Skill: "camera", Permissions: []string{"hw_read"}})
	ans, err := node.Chat(context.Background(), "camera", "what does the camera see?")
	if err != nil || ans.Text != "I see the picture." {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	second := model.last()
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
