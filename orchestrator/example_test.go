package orchestrator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// A program runs an orchestrator node in-process and talks to it: an
// embedded broker on a loopback port, the audit trail in a data directory,
// and (here) the fixed reply of a node with no language model configured.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "node")
	defer os.RemoveAll(dir)
	node, err := orchestrator.Start(context.Background(), orchestrator.Config{DataDir: filepath.Join(dir, "data"),
		Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0"}}, orchestrator.Options{Provider: scripted.Offline{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close()
	ans, err := node.Chat(context.Background(), "hello", "Are you there?")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.SplitN(ans.Text, ",", 2)[0])
	fmt.Println("audited in", filepath.Base(node.AuditPath()))
	// Output:
	// This node has no language model configured
	// audited in audit.db
}
