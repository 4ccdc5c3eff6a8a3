package edge_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/skills"
)

// An appliance embeds an edge agent with a tool written in Go, beside an
// orchestrator node in the same process. The node's model here is a
// scripted transcript (not a language model) that calls the tool once.
func ExampleAgent_AddTools() {
	dir, _ := os.MkdirTemp("", "appliance")
	defer os.RemoveAll(dir)
	model, _ := scripted.Parse([]byte(`{"name":"door","turns":[
	  {"content":"","tool_calls":[{"id":"c1","name":"garage__door_state","arguments":{}}]},
	  {"content":"The door is {{result c1}}."}]}`))
	node, err := orchestrator.Start(context.Background(), orchestrator.Config{DataDir: filepath.Join(dir, "node"),
		Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0",
			BrokerSecurity: orchestrator.BrokerSecurity{AllowAnonymous: true}}}, orchestrator.Options{Provider: model})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close()

	agent, err := edge.New(edge.Config{AgentID: "garage", DataDir: filepath.Join(dir, "garage"),
		MQTT: edge.MQTTConf{Broker: node.BrokerURL()}, Skills: edge.SkillConf{Permissions: []string{"hw_read"}}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = agent.AddTools(skills.GoTool{
		Tool: skills.Tool{Name: "door_state", Description: "Whether the garage door is open or closed",
			Permissions: []string{"hw_read"}, TimeoutMS: 2000},
		Run: func(ctx context.Context, _ map[string]any) skills.Output {
			return skills.Output{Content: []skills.Block{skills.TextBlock("closed")}} // read the sensor here
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Run(ctx) }()
	defer func() { stop(); <-done }()

	wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.WaitForAgents(wait, 1); err != nil {
		fmt.Println(err)
		return
	}
	ans, err := node.Chat(context.Background(), "door-check", "Is the garage door closed?")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ans.Text)
	// Output: The door is closed.
}
