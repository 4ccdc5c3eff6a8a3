package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestEdgeProcessPermissions runs a real `evoclaw edge` granted only
// fs_read with every built-in group: tools_list shows the read tools and
// no others, a tool command for bash answers permission_denied in the
// design's words without running, and the agent's audit trail records it.
func TestEdgeProcessPermissions(t *testing.T) {
	url := mqtttest.StartEmbedded(t)
	ws := t.TempDir()
	edge := startEdgeWith(t, "pi-ro", url, fmt.Sprintf("permissions = [\"fs_read\"]\n[builtin]\ngroups = [\"all\"]\nworkspace = %q\nsandbox = \"none\"\n", ws))
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: url, ClientID: "perm-test"}, "pi-ro")
	l, err := wire.DecodeToolsList(k.Ask("l1", `{"command":"tools_list","request_id":"l1"}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range l.Tools {
		names = append(names, ti.Name)
	}
	for _, bad := range []string{"bash", "write", "edit", "apply_patch"} {
		if strings.Contains(","+strings.Join(names, ",")+",", ","+bad+",") {
			t.Errorf("tools_list offers %s: %v", bad, names)
		}
	}
	if !strings.Contains(strings.Join(names, ","), "read") {
		t.Errorf("tools_list lacks read: %v", names)
	}
	res, err := wire.DecodeToolResult(k.Ask("b1", `{"command":"tool","payload":{"tool":"bash","parameters":{"command":"touch ran"}},"request_id":"b1"}`))
	if err != nil || res.ErrorType != wire.ErrPermissionDenied || !strings.HasPrefix(res.Error, "Permission denied for tool 'bash' (requires: shell).") {
		t.Fatalf("bash = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("bash ran")
	}
	edgeDB := filepath.Join(filepath.Dir(edge.cmd.Args[3]), "data", "audit.db")
	var rows [][]any
	testenv.Eventually(t, 10*time.Second, func() bool {
		rows = query(t, edgeDB, `SELECT tool, status, error_type FROM tool_calls WHERE request_id = 'b1'`)
		return len(rows) == 1
	}, "audit row of b1")
	if fmt.Sprint(rows[0]) != "[bash error permission_denied]" {
		t.Fatalf("edge audit %v", rows)
	}
}
