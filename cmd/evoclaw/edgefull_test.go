package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
)

// TestEdgeOnFullDiskSaysNotReady: an agent killed on a full card (a power
// cut) leaves its database's log and shared-memory files, and then starts
// on the full disk: its ready line is followed by one saying it is not
// ready and why. Stdout said "ready" and nothing more while every command
// was refused for want of room to record it.
func TestEdgeOnFullDiskSaysNotReady(t *testing.T) {
	dir := t.TempDir()
	mnt := filepath.Join(dir, "card")
	conf := filepath.Join(dir, "agent.toml")
	writeFile(t, conf, fmt.Sprintf("agent_id = \"pi-full\"\ndata_dir = %q\n[mqtt]\nbroker = %q\n", filepath.Join(mnt, "data"), mqtttest.StartEmbedded(t)))
	lines := secondStartOnFullCard(t, mnt, "edge agent pi-full ready", "edge", "--config", conf)
	if !strings.Contains(lines[1], "NOT READY") || !strings.Contains(lines[1], "disk is full") || !strings.Contains(lines[1], filepath.Join(mnt, "data")) {
		t.Fatalf("the line after the ready line does not say the agent is not ready for its full disk, naming its data directory:\n%s", strings.Join(lines, "\n"))
	}
}

// secondStartOnFullCard runs evoclaw with args on a 24 MiB tmpfs mounted
// at mnt (a new directory) in a mount namespace of its own: once until its
// stdout has a line holding readyMark, when it is killed with SIGKILL (a
// power cut); then, with the card filled, again until it printed a line
// after that one, or for 5 s. It returns the second start's stdout from
// its ready line on, which has a line after it. The processes' output
// goes beside mnt. It needs root and unshare(1).
func secondStartOnFullCard(t *testing.T, mnt, readyMark string, args ...string) []string {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		skipOrFail(t, "needs root and unshare(1): the full file system is a tmpfs mounted in a mount namespace")
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(mnt)
	const script = `set -e
card=$1 out=$2 mark=$3; shift 3
mount -t tmpfs -o size=24m tmpfs "$card"
ready() { i=0; until grep -qs "$mark" "$1"; do i=$((i+1)); [ $i -le 300 ] && kill -0 $2 || { cat "$1" "$1.err"; exit 1; }; sleep 0.1; done; }
"$@" >"$out/first" 2>"$out/first.err" & p=$!
ready "$out/first" $p; kill -9 $p; wait $p || :
head -c 50000000 /dev/zero >"$card/fill" 2>/dev/null || :
"$@" >"$out/second" 2>"$out/second.err" & p=$!
ready "$out/second" $p
i=0; while [ $(sed -n "/$mark/,\$p" "$out/second" | wc -l) -lt 2 ] && [ $i -lt 50 ]; do i=$((i+1)); sleep 0.1; done
kill -INT $p; wait $p || :
cat "$out/second"
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", mnt, dir, readyMark, evoclawBinary(t)}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + dir}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, readyMark) })
	if i < 0 || i+1 == len(lines) {
		t.Fatalf("no ready line, or nothing after it:\n%s", out)
	}
	return lines[i:]
}

// TestStartOnCardTurnedReadOnly: a node or an agent started on a card the
// kernel turned read-only after write errors (ext4 errors=remount-ro,
// which recent kernels mark emergency_ro while statfs still says
// writable) is refused first thing, with the line saying the file system
// is read-only and nothing before it. The node started its broker first,
// and logged it, before the audit database failed to open. It needs root
// and loop devices (testenv.NewCard).
func TestStartOnCardTurnedReadOnly(t *testing.T) {
	card := testenv.NewCard(t)
	data := filepath.Join(card.Dir, "data")
	if err := os.MkdirAll(filepath.Join(data, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	node, agent := filepath.Join(dir, "evoclaw.toml"), filepath.Join(dir, "agent.toml")
	writeFile(t, node, fmt.Sprintf("[http]\nlisten = \"127.0.0.1:%d\"\n[broker]\nlisten = \"127.0.0.1:%d\"\n", freePort(t), freePort(t)))
	writeFile(t, agent, fmt.Sprintf("agent_id = \"pi-ro\"\ndata_dir = %q\n[mqtt]\nbroker = \"mqtt://127.0.0.1:1\"\n", data))
	card.TurnReadOnly()
	for _, args := range [][]string{{"serve", "--config", node, "--data-dir", data}, {"edge", "--config", agent}} {
		code, out, errOut := runBinary(t, "", args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 1 || out != "" || len(lines) != 1 || !strings.Contains(errOut, "mounted read-only") || !strings.Contains(errOut, data) {
			t.Errorf("%s on a card turned read-only: exit %d, stdout %q, stderr:\n%s\nwant exit 1 and one line naming the read-only file system and %s", args[0], code, out, errOut, data)
		}
	}
}
