package broker_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// wantLog fails unless a line of logs contains every one of parts.
func wantLog(t *testing.T, logs *testenv.Buffer, parts ...string) {
	t.Helper()
	testenv.Eventually(t, 5*time.Second, func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
		return false
	}, fmt.Sprintf("a log line with %q", parts))
}

var fleet = []broker.User{
	{Name: "ops", Role: broker.RoleOrchestrator, Password: "ops-pw"},
	{Name: "ops2", Role: broker.RoleOrchestrator, Password: "ops2-pw"},
	{Name: "alex-eye", Role: broker.RoleAgent, Password: "alex-pw"},
	{Name: "bob", Role: broker.RoleAgent, Password: "bob-pw"},
}

func agentConn(t *testing.T, b *broker.Broker, name, password string) net.Conn {
	t.Helper()
	c, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-" + name, Username: name, Password: password})
	if rc != 0 {
		t.Fatalf("agent %s CONNECT return code %d", name, rc)
	}
	return c
}

// watch subscribes an orchestrator session to filter and gathers what it
// receives.
func watch(t *testing.T, b *broker.Broker, filter string) *mqtttest.Inbox {
	t.Helper()
	c := mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "watch-" + t.Name(), Username: "ops", Password: "ops-pw"})
	col := &mqtttest.Inbox{}
	if err := c.Subscribe(filter, 1, col.Handle); err != nil {
		t.Fatal(err)
	}
	return col
}

// TestImpersonationRefusedAndLogged plays a compromised or misconfigured
// agent: every attempt to act as someone else is refused and logged, while
// the same client's legitimate traffic flows.
func TestImpersonationRefusedAndLogged(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, Logger: logs.Logger(slog.LevelDebug)})

	t.Run("connect", func(t *testing.T) {
		tests := []struct {
			name string
			c    mqtttest.RawConnect
			log  string
		}{
			{"wrong password", mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "guess"}, "bad username or password"},
			{"another agent's name", mqtttest.RawConnect{ClientID: "evoclaw-bob", Username: "bob", Password: "alex-pw"}, "bad username or password"},
			{"unknown name", mqtttest.RawConnect{ClientID: "evoclaw-mallory", Username: "mallory", Password: "x"}, "bad username or password"},
			{"anonymous", mqtttest.RawConnect{ClientID: "evoclaw-anon"}, "anonymous clients are not allowed"},
			{"another agent's client id", mqtttest.RawConnect{ClientID: "evoclaw-bob", Username: "alex-eye", Password: "alex-pw"}, `must use \"evoclaw-alex-eye\"`},
			{"will on another agent's status", mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "alex-pw",
				WillTopic: wire.StatusTopic("bob"), WillPayload: `{"agent_id":"bob","status":"offline"}`}, "last will on"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if _, rc := mqtttest.DialRaw(t, b.Addr(), tt.c); rc != 5 {
					t.Fatalf("CONNACK return code %d, want 5 (not authorized)", rc)
				}
				wantLog(t, &logs, "mqtt client refused", "client="+tt.c.ClientID, tt.log)
			})
		}
	})

	t.Run("subscribe", func(t *testing.T) {
		alex := agentConn(t, b, "alex-eye", "alex-pw")
		tests := []struct {
			filter string
			code   byte
		}{
			{wire.CommandsTopic("alex-eye"), 1},
			{"#", 0x80},
			{"$SYS/#", 0x80},
			{wire.AllAgents(wire.KindCommands), 0x80},
			{wire.CommandsTopic("bob"), 0x80},
			{wire.AllAgents(wire.KindReports), 0x80},
		}
		for _, tt := range tests {
			if code := mqtttest.RawSubscribe(t, alex, tt.filter); code != tt.code {
				t.Errorf("alex-eye SUBSCRIBE %s: SUBACK %#x, want %#x", tt.filter, code, tt.code)
			}
			if tt.code == 0x80 {
				wantLog(t, &logs, "mqtt access denied", "user=alex-eye", "topic="+tt.filter)
			}
		}
	})

	t.Run("publish", func(t *testing.T) {
		reports := watch(t, b, wire.TopicPrefix+"#")
		tests := []struct {
			name, as, pw, topic string
		}{
			{"agent forges another agent's report", "alex-eye", "alex-pw", wire.ReportsTopic("bob")},
			{"agent forges another agent's status", "alex-eye", "alex-pw", wire.StatusTopic("bob")},
			{"agent sends a command", "alex-eye", "alex-pw", wire.CommandsTopic("bob")},
			{"agent publishes outside evoclaw", "alex-eye", "alex-pw", "plant/valve/open"},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				forged := fmt.Sprintf(`{"forged":%d}`, i)
				c := agentConn(t, b, tt.as, tt.pw)
				mqtttest.RawPublish(t, c, tt.topic, forged, false)
				if !mqtttest.RawClosed(c, 5*time.Second) {
					t.Fatal("the broker kept the connection of a client that published outside its topics")
				}
				wantLog(t, &logs, "mqtt access denied", "user="+tt.as, "op=publish", "topic="+tt.topic)
				// Legitimate traffic after the refusal arrives; the forged
				// message, processed before the connection closed, did not.
				marker := fmt.Sprintf(`{"marker":%d}`, i)
				bob := agentConn(t, b, "bob", "bob-pw")
				mqtttest.RawPublish(t, bob, wire.ReportsTopic("bob"), marker, false)
				testenv.Eventually(t, 5*time.Second, func() bool { return reports.Has("", marker) }, "bob's own report delivered")
				bob.Close()
				if reports.Has("", forged) {
					t.Fatalf("forged message on %s was delivered", tt.topic)
				}
			})
		}
	})

	t.Run("orchestrator cannot forge reports", func(t *testing.T) {
		reports := watch(t, b, wire.AllAgents(wire.KindReports))
		c, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "ops-raw", Username: "ops", Password: "ops-pw"})
		if rc != 0 {
			t.Fatalf("rc %d", rc)
		}
		mqtttest.RawPublish(t, c, wire.ReportsTopic("bob"), `{"forged":"by ops"}`, false)
		if !mqtttest.RawClosed(c, 5*time.Second) {
			t.Fatal("orchestrator that published a report kept its connection")
		}
		if reports.Has("", `{"forged":"by ops"}`) {
			t.Fatal("report forged by an orchestrator was delivered")
		}
	})

	t.Run("client id takeover", func(t *testing.T) {
		alex := agentConn(t, b, "alex-eye", "alex-pw")
		if _, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "ops2", Password: "ops2-pw"}); rc != 5 {
			t.Fatalf("another identity taking over evoclaw-alex-eye: rc %d, want 5", rc)
		}
		wantLog(t, &logs, "mqtt client refused", "in use by another identity")
		if mqtttest.RawClosed(alex, 200*time.Millisecond) {
			t.Fatal("the refused takeover still closed the agent's session")
		}
		// The same identity may replace its own session (a reconnecting agent).
		if _, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "alex-pw"}); rc != 0 {
			t.Fatalf("agent replacing its own session: rc %d, want 0", rc)
		}
	})
}

// TestUsersFileReload: identities added, removed and re-keyed in the file
// take effect on a running broker, and end sessions they no longer allow.
func TestUsersFileReload(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	path := filepath.Join(t.TempDir(), broker.UsersFileName)
	alexPW, err := broker.AddUser(path, "alex-eye", broker.RoleAgent, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	b := start(t, broker.Options{Listen: "127.0.0.1:0", UsersFile: path, ReloadInterval: 20 * time.Millisecond, Logger: logs.Logger(slog.LevelDebug)})
	alex := agentConn(t, b, "alex-eye", alexPW)
	// A second connection with the same password is checked from the cache.
	agentConn(t, b, "alex-eye", alexPW)
	alex = agentConn(t, b, "alex-eye", alexPW)

	bobPW, err := broker.AddUser(path, "bob", broker.RoleAgent, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	connects := func(name, pw string) func() bool {
		return func() bool {
			c, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-" + name, Username: name, Password: pw})
			c.Close()
			return rc == 0
		}
	}
	testenv.Eventually(t, 5*time.Second, connects("bob", bobPW), "bob, added to the file, may connect")

	if err := broker.RemoveUser(path, "alex-eye"); err != nil {
		t.Fatal(err)
	}
	if !mqtttest.RawClosed(alex, 5*time.Second) {
		t.Fatal("the session of a removed identity was not ended")
	}
	wantLog(t, &logs, "mqtt session ended", "user=alex-eye", "identity removed")
	if connects("alex-eye", alexPW)() {
		t.Fatal("a removed identity could connect again")
	}

	bob := agentConn(t, b, "bob", bobPW)
	newPW, err := broker.AddUser(path, "bob", broker.RoleAgent, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	if !mqtttest.RawClosed(bob, 5*time.Second) {
		t.Fatal("the session of an identity whose password changed was not ended")
	}
	if connects("bob", bobPW)() {
		t.Fatal("the old password still works after rotation (cache not invalidated?)")
	}
	if !connects("bob", newPW)() {
		t.Fatal("the new password does not work")
	}

	// A broken file is refused whole; the broker keeps what it had.
	if err := writeFile(path, "bob agent not-a-hash 2026-01-01T00:00:00Z\n"); err != nil {
		t.Fatal(err)
	}
	wantLog(t, &logs, "kept its previous identities", "bcrypt-hash")
	if !connects("bob", newPW)() {
		t.Fatal("a broken users file locked bob out")
	}
}

func writeFile(path, content string) error {
	return os.WriteFile(path, []byte(content), 0o600)
}

// TestOversizedPacketRefusedAndLogged: a packet over MaxPacketBytes ends
// the sender's connection, is not delivered, and is logged with who sent it.
func TestOversizedPacketRefusedAndLogged(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, MaxPacketBytes: 1024, Logger: logs.Logger(slog.LevelDebug)})
	reports := watch(t, b, wire.AllAgents(wire.KindReports))
	alex := agentConn(t, b, "alex-eye", "alex-pw")
	big := `{"big":"` + strings.Repeat("x", 2048) + `"}`
	mqtttest.RawPublish(t, alex, wire.ReportsTopic("alex-eye"), big, false)
	if !mqtttest.RawClosed(alex, 5*time.Second) {
		t.Fatal("connection kept after an oversized packet")
	}
	wantLog(t, &logs, "packet over the size limit", "user=alex-eye")
	bob := agentConn(t, b, "bob", "bob-pw")
	mqtttest.RawPublish(t, bob, wire.ReportsTopic("bob"), `{"small":1}`, false)
	testenv.Eventually(t, 5*time.Second, func() bool { return reports.Has("", `{"small":1}`) }, "a small report still flows")
	if reports.Has("", big) {
		t.Fatal("oversized report delivered")
	}
}

func TestUsersFileReadableByOthersWarns(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	path := filepath.Join(t.TempDir(), broker.UsersFileName)
	if _, err := broker.AddUser(path, "alex-eye", broker.RoleAgent, 4, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, broker.Options{Listen: "127.0.0.1:0", UsersFile: path, Logger: logs.Logger(slog.LevelDebug)})
	wantLog(t, &logs, "level=WARN", "readable by other users", "file="+path)
}

func TestBrokenUsersFileFailsStart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), broker.UsersFileName)
	if err := writeFile(path, "alex-eye agent nothash 2026-01-01T00:00:00Z\n"); err != nil {
		t.Fatal(err)
	}
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", UsersFile: path})
	if err == nil {
		_ = b.Close()
		t.Fatal("broker started with a broken users file")
	}
	if !errors.Is(err, broker.ErrUsersFile) || !strings.Contains(err.Error(), path+":1: bcrypt-hash") {
		t.Fatalf("Start = %v, want ErrUsersFile naming %s:1 and the field", err, path)
	}
}

// TestReloadOnSIGHUP runs alone: it signals the test process itself, which
// only the broker's handler keeps alive.
func TestReloadOnSIGHUP(t *testing.T) {
	var logs testenv.Buffer
	path := filepath.Join(t.TempDir(), broker.UsersFileName)
	b := start(t, broker.Options{Listen: "127.0.0.1:0", UsersFile: path, ReloadInterval: -1, ReloadOnSIGHUP: true, Logger: logs.Logger(slog.LevelDebug)})
	pw, err := broker.AddUser(path, "alex-eye", broker.RoleAgent, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: pw}); rc == 0 {
		t.Fatal("identity known before any reload: polling is off, so the test cannot tell a signal did it")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wantLog(t, &logs, "reloading mqtt identities and certificate on signal")
	testenv.Eventually(t, 5*time.Second, func() bool {
		c, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: pw})
		c.Close()
		return rc == 0
	}, "identity added to the file is known after SIGHUP")
}

// TestSessionTakeoverIsLogged: two clients of one identity with one client
// id (two edge agents given the same agent_id) take the session from each
// other at every connect. The broker warns, naming the id and both
// addresses, at most a few lines per id however long it goes on; another
// id gets lines of its own. Before, the broker logged nothing about it and
// each agent saw only its connection lost.
func TestSessionTakeoverIsLogged(t *testing.T) {
	var logs testenv.Buffer
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, Logger: logs.Logger(slog.LevelInfo)})
	const msg = "mqtt session taken over"
	lines := func(client string) []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, msg) && strings.Contains(l, "client="+client+" ") {
				out = append(out, l)
			}
		}
		return out
	}

	const takeovers = 12
	var want []string // the first lines' old and new remotes
	old := agentConn(t, b, "bob", "bob-pw")
	for i := range takeovers {
		c := agentConn(t, b, "bob", "bob-pw")
		want = append(want, "old_remote="+old.LocalAddr().String()+" new_remote="+c.LocalAddr().String())
		if !mqtttest.RawClosed(old, 5*time.Second) {
			t.Fatalf("takeover %d: the older client kept its connection", i+1)
		}
		old = c
	}
	got := lines("evoclaw-bob")
	if len(got) == 0 || len(got) >= takeovers/2 {
		t.Fatalf("%d takeovers gave %d lines, want a few:\n%s", takeovers, len(got), logs.String())
	}
	for i, l := range got {
		if strings.Contains(l, "…") || !strings.Contains(l, "level=WARN") || !strings.Contains(l, "user=bob") || !strings.Contains(l, want[i]) {
			t.Errorf("line %d: %s\nwant WARN, user=bob and %s", i+1, l, want[i])
		}
	}

	// The quota is per client id: alex's first takeover is logged.
	agentConn(t, b, "alex-eye", "alex-pw")
	a2 := agentConn(t, b, "alex-eye", "alex-pw")
	if got := lines("evoclaw-alex-eye"); len(got) != 1 || !strings.Contains(got[0], "new_remote="+a2.LocalAddr().String()) {
		t.Errorf("alex's takeover: %q", got)
	}

	// Clients on ids of their own take nothing over.
	for _, id := range []string{"ops-1", "ops-2", "ops-3"} {
		if _, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: id, Username: "ops", Password: "ops-pw"}); rc != 0 {
			t.Fatalf("%s: rc %d", id, rc)
		}
		if got := lines(id); len(got) != 0 {
			t.Errorf("%d lines for %s, alone on its id: %q", len(got), id, got)
		}
	}
}

// TestUsersFileChangeAdmitsAtOnce: an identity added to the users file, or
// a password rotated in it, may log in at once, before the watcher has
// applied the change (it waits for the file to settle: up to two polls).
// Before, an agent started right after `evoclaw agents add` was refused
// ("bad username or password") and exited. A file read so installs
// nothing: a rewrite in place that for a moment lacks an identity does not
// end its session.
func TestUsersFileChangeAdmitsAtOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), broker.UsersFileName)
	alexPW, err := broker.AddUser(path, "alex-eye", broker.RoleAgent, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	// The watcher polls once an hour: only the refused login's second look
	// can know of what the test writes.
	b := start(t, broker.Options{Listen: "127.0.0.1:0", UsersFile: path, ReloadInterval: time.Hour})
	alex := agentConn(t, b, "alex-eye", alexPW)
	rc := func(name, pw string) byte {
		c, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-" + name, Username: name, Password: pw})
		c.Close()
		return rc
	}

	bobPW, err := broker.AddUser(path, "bob", broker.RoleAgent, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := rc("bob", bobPW); got != 0 {
		t.Fatalf("bob, added to the file a moment ago: CONNECT return code %d, want 0", got)
	}
	if got := rc("bob", "not-"+bobPW); got == 0 {
		t.Fatal("bob with a wrong password was let in")
	}
	if got := rc("carol", "carol-pw"); got == 0 {
		t.Fatal("a name in no file was let in")
	}
	newPW, err := broker.AddUser(path, "bob", broker.RoleAgent, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := rc("bob", newPW); got != 0 {
		t.Fatalf("bob's rotated password, a moment after the rotation: CONNECT return code %d, want 0", got)
	}

	// The file rewritten in place with bob alone (alex's line not yet
	// written back): bob still gets in, alex's session stays.
	users, err := broker.ReadUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var bobOnly []broker.FileUser
	for _, u := range users {
		if u.Name == "bob" {
			bobOnly = append(bobOnly, u)
		}
	}
	if err := os.WriteFile(path, broker.FormatUsers(bobOnly), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := rc("bob", newPW); got != 0 {
		t.Fatalf("bob after a rewrite in place: CONNECT return code %d, want 0", got)
	}
	if mqtttest.RawClosed(alex, 300*time.Millisecond) {
		t.Fatal("a login's look at a half-rewritten users file ended another identity's session")
	}
}
