package sqlite

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// An upgrade of an existing database says in the log that it runs, from
// which version to which, and when it is done; a database already current
// and a new one say nothing of it. A node upgrading a million old records
// was silent for ten seconds (minutes on a Pi) and looked hung.
func TestUpgradeIsLogged(t *testing.T) {
	const started, finished = "upgrading the audit database's schema", "audit database schema upgraded"
	v4 := fixture(t, "v4.db")
	for _, tc := range []struct {
		name     string
		path     string
		upgraded bool
	}{
		{"v4 database", v4, true},
		{"the same database, now current", v4, false},
		{"new database", filepath.Join(t.TempDir(), "audit.db"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testenv.Buffer
			s, err := Open(tc.path, Options{Logger: logs.Logger(slog.LevelInfo)})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			out := logs.String()
			versions := fmt.Sprintf("from_version=4 to_version=%d", SchemaVersion)
			for _, msg := range []string{started, finished} {
				line := logLine(out, msg)
				switch {
				case tc.upgraded && line == "":
					t.Errorf("no %q line in the log:\n%s", msg, out)
				case tc.upgraded && (!strings.Contains(line, versions) || !strings.Contains(line, tc.path)):
					t.Errorf("line %q names neither %q nor the file", line, versions)
				case !tc.upgraded && line != "":
					t.Errorf("a database not upgraded logged %q", line)
				}
			}
		})
	}
}

// While an upgrade runs, the log says every upgradeNoticeEvery that it
// still does, and stops saying it once the upgrade ends.
func TestUpgradeSaysItIsStillRunning(t *testing.T) {
	last := len(migrations)
	orig := migrationHooks[last]
	every := upgradeNoticeEvery
	t.Cleanup(func() {
		upgradeNoticeEvery = every
		if orig == nil {
			delete(migrationHooks, last)
		} else {
			migrationHooks[last] = orig
		}
	})
	upgradeNoticeEvery = 5 * time.Millisecond
	var logs testenv.Buffer
	// The last step waits until the upgrade has said twice that it still
	// runs: a long upgrade, without waiting for one.
	migrationHooks[last] = func(ctx context.Context, tx dbtx, key auditchain.Key) error {
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(logs.String(), "still upgrading") < 2 {
			if time.Now().After(deadline) {
				return fmt.Errorf("no notice that the upgrade still runs within 5s:\n%s", logs.String())
			}
			time.Sleep(time.Millisecond)
		}
		if orig != nil {
			return orig(ctx, tx, key)
		}
		return nil
	}
	path := fixture(t, "v4.db")
	s, err := Open(path, Options{Logger: logs.Logger(slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := logs.String()
	if !strings.Contains(logLine(out, "still upgrading"), "elapsed=") {
		t.Errorf("the notice names no elapsed time:\n%s", out)
	}
	// Stopped with the upgrade: no notice after its end, however long
	// one waits (ten of its periods here).
	time.Sleep(10 * upgradeNoticeEvery)
	after := logs.String()
	end := strings.Index(after, "audit database schema upgraded")
	if end < 0 {
		t.Fatalf("no line saying the upgrade ended:\n%s", after)
	}
	if strings.Contains(after[end:], "still upgrading") {
		t.Errorf("a notice after the upgrade ended:\n%s", after)
	}
}

// logLine returns the first line of out holding msg, or "".
func logLine(out, msg string) string {
	for line := range strings.Lines(out) {
		if strings.Contains(line, msg) {
			return line
		}
	}
	return ""
}
