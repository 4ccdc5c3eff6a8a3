package orchestrator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// A program runs an orchestrator node in-process and talks to it: an
// embedded broker on a loopback port, the audit trail in a data directory,
// and (here) no language model: the node refuses the chat, saying so
// (kind not_configured; HTTP 503, code model_not_configured, on its API).
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
	_, err = node.Chat(context.Background(), "hello", "Are you there?")
	fmt.Println("refused:", llm.KindOf(err))
	fmt.Println("audit trail in", filepath.Base(node.AuditPath()))
	// Output:
	// refused: not_configured
	// audit trail in audit.db
}
