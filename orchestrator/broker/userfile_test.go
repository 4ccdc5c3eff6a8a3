package broker_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// hash4 is a bcrypt hash at the minimum cost, so tests stay fast.
func hash4(t testing.TB, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func TestParseUsersRejects(t *testing.T) {
	t.Parallel()
	h := hash4(t, "pw")
	tests := []struct {
		name, text, want string
	}{
		{"three fields", "alex agent " + h + "\n", "t:1: line: 3 fields"},
		{"bad name", "al/ex agent " + h + " 2026-01-02T03:04:05Z\n", "t:1: name"},
		{"bad role", "alex admin " + h + " 2026-01-02T03:04:05Z\n", `t:1: role: "admin"`},
		{"not bcrypt", "alex agent plaintext 2026-01-02T03:04:05Z\n", "t:1: bcrypt-hash"},
		{"bad time", "alex agent " + h + " yesterday\n", "t:1: created"},
		// Its client id, evoclaw-orchestrator-pi2, is node pi2's.
		{"agent named as a node", "orchestrator-pi2 agent " + h + " 2026-01-02T03:04:05Z\n", `t:1: name: agent "orchestrator-pi2": agent names starting with "orchestrator-" are reserved`},
		{"duplicate", "# c\nalex agent " + h + " 2026-01-02T03:04:05Z\n\nalex agent " + h + " 2026-01-02T03:04:05Z\n", `t:4: name: "alex" already defined on line 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := broker.ParseUsers("t", []byte(tt.text))
			if !errors.Is(err, broker.ErrUsersFile) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseUsers = %v, want ErrUsersFile mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := broker.ParseUsers("t", make([]byte, broker.MaxUsersFileBytes+1)); !errors.Is(err, broker.ErrUsersFile) {
		t.Fatalf("oversized file: %v", err)
	}
}

func TestUsersFileRoundTripAndPermissions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, broker.UsersFileName)
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	want := []broker.FileUser{
		{Name: "alex-eye", Role: broker.RoleAgent, Hash: hash4(t, "a"), Created: created},
		{Name: "ops", Role: broker.RoleOrchestrator, Hash: hash4(t, "b"), Created: created},
	}
	if err := broker.WriteUsersFile(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := broker.ReadUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d users, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("user %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
	if _, err := broker.ReadUsersFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestAddUserConcurrent checks the lock: concurrent adds to one file all
// land, none overwrites another.
func TestAddUserConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", broker.UsersFileName)
	names := []string{"a1", "a2", "a3", "a4", "a5", "a6"}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			if _, err := broker.AddUser(path, n, broker.RoleAgent, bcrypt.MinCost, false); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	users, err := broker.ReadUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != len(names) {
		t.Fatalf("%d users after %d concurrent adds: %+v", len(users), len(names), users)
	}
	pw, err := broker.AddUser(path, "a1", broker.RoleAgent, bcrypt.MinCost, false)
	if !errors.Is(err, broker.ErrUserExists) || pw != "" {
		t.Fatalf("second add without rotate: %q, %v; want ErrUserExists", pw, err)
	}
	pw, err = broker.AddUser(path, "a1", broker.RoleAgent, bcrypt.MinCost, true)
	if err != nil || len(pw) < 40 {
		t.Fatalf("rotate: %q, %v", pw, err)
	}
	if _, err := broker.AddUser(path, "orchestrator-main", broker.RoleAgent, bcrypt.MinCost, false); err == nil {
		t.Fatal("agent named orchestrator-main accepted; its client id would be the node's")
	}
	if err := broker.RemoveUser(path, "nobody"); !errors.Is(err, broker.ErrNoSuchUser) {
		t.Fatalf("remove unknown: %v", err)
	}
}

// FuzzParseUsers: the users file is edited by hand sometimes; no content
// may crash the parser, and what it accepts must be usable.
func FuzzParseUsers(f *testing.F) {
	f.Add([]byte("alex agent $2a$04$abcdefghijklmnopqrstuuJ4b5PbWJXYxVh9gPFSTHZlq7x8kyyWm 2026-01-02T03:04:05Z\n"))
	f.Add([]byte("# comment\n\nops orchestrator $2a$10$x 2026-01-02T03:04:05Z\n"))
	f.Add([]byte("a b c d e\n"))
	f.Add([]byte("orchestrator-n1 agent $2a$04$abcdefghijklmnopqrstuuJ4b5PbWJXYxVh9gPFSTHZlq7x8kyyWm 2026-01-02T03:04:05Z\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		users, err := broker.ParseUsers("fuzz", b)
		if err != nil {
			if !errors.Is(err, broker.ErrUsersFile) {
				t.Fatalf("error %v does not match ErrUsersFile", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, u := range users {
			if u.Name == "" || seen[u.Name] || !u.Role.Valid() || u.Role == broker.RoleAgent && strings.HasPrefix(u.Name, "orchestrator-") {
				t.Fatalf("accepted invalid user %+v", u)
			}
			if _, err := bcrypt.Cost([]byte(u.Hash)); err != nil {
				t.Fatalf("accepted hash %q: %v", u.Hash, err)
			}
			seen[u.Name] = true
		}
		again, err := broker.ParseUsers("fuzz", broker.FormatUsers(users))
		if err != nil || len(again) != len(users) {
			t.Fatalf("formatted users do not parse back: %v", err)
		}
	})
}

// TestAgentNamedAsANodeNeverHoldsItsClientID: an agent line named
// orchestrator-pi2, written by hand (`evoclaw agents add` refuses it), would
// log in with client id evoclaw-orchestrator-pi2, node pi2's, and while it
// held it node pi2, restarting onto the broker it shares, was refused
// ("not Authorized") and could not start. The file is refused where it is
// read: at start, at a reload (the broker keeps what it had) and at the
// look a refused login takes at a changed file.
func TestAgentNamedAsANodeNeverHoldsItsClientID(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), broker.UsersFileName)
	const line = "orchestrator-pi2 agent %s 2026-01-02T03:04:05Z\n"
	if err := writeFile(path, fmt.Sprintf(line, hash4(t, "rogue-pw"))); err != nil {
		t.Fatal(err)
	}
	if b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", UsersFile: path}); err == nil {
		_ = b.Close()
		t.Fatal("broker started with an agent named as a node")
	} else if !errors.Is(err, broker.ErrUsersFile) || !strings.Contains(err.Error(), path+":1: name") {
		t.Fatalf("Start = %v, want ErrUsersFile naming %s:1 and the name", err, path)
	}

	if err := broker.WriteUsersFile(path, []broker.FileUser{{Name: "ops", Role: broker.RoleOrchestrator, Hash: hash4(t, "ops-pw"), Created: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	b := start(t, broker.Options{Listen: "127.0.0.1:0", UsersFile: path, ReloadInterval: 20 * time.Millisecond, Logger: logs.Logger(slog.LevelDebug)})
	// Appended, as by hand: read at once by the login's second look, then
	// by the reload.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, line, hash4(t, "rogue-pw"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	rogue, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-orchestrator-pi2", Username: "orchestrator-pi2", Password: "rogue-pw"})
	rogue.Close()
	if rc == 0 {
		t.Fatal("an agent named orchestrator-pi2 logged in with node pi2's client id")
	}
	wantLog(t, &logs, "kept its previous identities", path+":4: name", "orchestrator-pi2", "reserved")
	node, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-orchestrator-pi2", Username: "ops", Password: "ops-pw"})
	node.Close()
	if rc != 0 {
		t.Fatalf("node pi2 refused (CONNECT return code %d) after the file was refused", rc)
	}
}
