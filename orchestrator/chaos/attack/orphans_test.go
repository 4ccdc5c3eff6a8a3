//go:build linux

package attack

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
)

// orphanTools: an agent running long tools (a skill binary and bash,
// unconfined and in bubblewrap) is SIGKILLed. Each tool must die within
// seconds, and the restarted agent must audit each cut run exactly once
// as interrupted, leaving no request running. cmd/evoclaw's
// TestToolsDieWithTheAgent covers firejail and leftovers in the group too.
func orphanTools(t *testing.T, b *board) {
	c := b.class("killed-agent orphan tools", true)
	brokerURL := mqtttest.StartEmbedded(t)
	kinds := []string{"none"}
	if _, ok := testenv.Lookup("bwrap"); ok {
		kinds = append(kinds, "bubblewrap")
	} else {
		testenv.Missing(t, t.Logf, "bwrap", "apt-get install bubblewrap")
	}
	for _, kind := range kinds {
		ws := t.TempDir()
		e := evoclawtest.StartEdge(t, evoclawtest.EdgeSpec{ID: "attack-" + kind, BrokerURL: brokerURL,
			SkillDirs: []string{evoclawtest.LoopSkill(t, kind)},
			Extra:     fmt.Sprintf("permissions = [\"shell\", \"file_read\", \"file_write\"]\n[builtin]\ngroups = [\"coding\"]\nworkspace = %q\nsandbox = %q\n", ws, kind)})
		runs := map[string]string{"skill-" + kind: filepath.Join(ws, "skill.m"), "bash-" + kind: filepath.Join(ws, "bash.m")}
		e.SendTool("skill-"+kind, "loop_"+kind, map[string]any{"marker": runs["skill-"+kind]})
		e.SendTool("bash-"+kind, "bash", map[string]any{"command": evoclawtest.BashLoop(runs["bash-"+kind], false), "timeout_ms": 60000})
		for _, m := range runs {
			testenv.Eventually(t, 20*time.Second, func() bool { return evoclawtest.Size(m) > 0 }, "a tool to start writing "+m)
		}
		e.Kill()
		deadline := time.Now().Add(5 * time.Second)
		for id, m := range runs {
			for len(evoclawtest.PidsWith(m)) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond) // polling /proc for the tool's death
			}
			c.try(len(evoclawtest.PidsWith(m)) == 0 && !evoclawtest.Grows(m, 500*time.Millisecond), id+" outlived its agent")
		}
		for range 2 { // a restart after a restart audits nothing twice
			e.Start()
			for id := range runs {
				rows := e.Query(`SELECT error_type FROM tool_calls WHERE request_id = '` + id + `'`)
				c.try(fmt.Sprint(rows) == "[[interrupted]]", fmt.Sprintf("%s audited as %v", id, rows))
			}
			left := e.Query(`SELECT count(*) FROM request_log WHERE state = 'running'`)
			c.try(fmt.Sprint(left) == "[[0]]", fmt.Sprintf("requests left running: %v", left))
			e.Kill()
		}
	}
}
