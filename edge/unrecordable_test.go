package edge

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/boundlog"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

// TestUnrecordableCommandRefusedAndLogged: an agent whose audit trail
// cannot write (its disk full, on a tmpfs when root may mount one; its
// store closed under it, which fails the same way for any user) runs no
// command it cannot record, answers why, and says so in its own log,
// within the log's bound. The agent logged nothing: its operator saw calls
// fail only from the node's side.
func TestUnrecordableCommandRefusedAndLogged(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // in the answer
	}{
		{"store closed", "closed"},
		{"disk full", "disk is full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			if tc.name == "disk full" {
				mountSmall(t, dataDir)
			}
			ws := t.TempDir()
			url := mqtttest.StartEmbedded(t)
			var logs testenv.Buffer
			cfg := Config{AgentID: "pi-u", DataDir: dataDir, MQTT: MQTTConf{Broker: url},
				Builtin: toolbox.Builtin{Groups: []string{"coding"}, Workspace: ws, Sandbox: "none"}, Skills: SkillConf{Permissions: []string{"shell"}}}
			a, err := New(cfg, logs.Logger(slog.LevelInfo))
			if err != nil {
				t.Fatal(err)
			}
			runAgent(t, a, 10*time.Second)
			k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: url, ClientID: "fake-orchestrator"}, "pi-u")
			if tc.name == "disk full" {
				fillDir(t, dataDir)
			} else if err := a.store.Close(); err != nil {
				t.Fatal(err)
			}
			const commands = 3 * boundlog.DefaultBurst
			for i := range commands {
				id := fmt.Sprintf("u%d", i)
				marker := filepath.Join(ws, id)
				r := k.Ask(id, fmt.Sprintf(`{"command":"tool","payload":{"tool":"bash","parameters":{"command":"touch %s"}},"request_id":%q}`, marker, id))
				e, err := wire.DecodeErrorPayload(r)
				if err != nil || r.ReportType != wire.ReportError || !strings.Contains(e.Error, tc.want) {
					t.Fatalf("%s: %s %+v (%v), want an error naming %q", id, r.ReportType, e, err, tc.want)
				}
				if _, err := os.Stat(marker); !os.IsNotExist(err) {
					t.Fatalf("%s ran though its run could not be recorded (%v)", id, err)
				}
			}
			logged := strings.Count(logs.String(), "the audit trail cannot record its run")
			if logged == 0 || logged > boundlog.DefaultBurst {
				t.Fatalf("%d unrecordable commands logged %d lines, want 1 to %d:\n%s", commands, logged, boundlog.DefaultBurst, logs.String())
			}
			if !strings.Contains(logs.String(), "data_dir="+dataDir) {
				t.Errorf("the log line does not name the data directory %s:\n%s", dataDir, logs.String())
			}
		})
	}
}

// mountSmall mounts a 2 MiB tmpfs on dir until the test ends; it skips
// loudly without root.
func mountSmall(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root to mount a small tmpfs; the store-closed case covers the same refusal")
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("SKIP: cannot mount a tmpfs here (%v); the store-closed case covers the same refusal", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// fillDir writes a file in dir until its file system is full.
func fillDir(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{64 << 10, 512} {
		buf := make([]byte, size)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
}
