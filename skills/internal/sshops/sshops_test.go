//go:build linux

package sshops_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/internal/opstest"
	"github.com/evoclaw/evoclaw/skills/internal/proctest"
	"github.com/evoclaw/evoclaw/skills/internal/sshops"
)

// TestSSHContract runs the built-in tools' backend contract, the one the
// local backend passes, over a real sshd on loopback.
func TestSSHContract(t *testing.T) {
	srv := startSSHD(t)
	opstest.Run(t, func(t *testing.T) builtin.Options {
		dir := t.TempDir()
		c := srv.dial(t, dir)
		return builtin.Options{Dir: dir, Files: c.Files(), Exec: c.Exec()}
	})
}

func TestSSHRemoteGroup(t *testing.T) {
	srv := startSSHD(t)
	dir := t.TempDir()
	c := srv.dial(t, dir)
	tools, err := builtin.Group(builtin.GroupRemote, builtin.Options{Dir: dir, Files: c.Files(), Exec: c.Exec()})
	if err != nil || len(tools) != 6 {
		t.Fatalf("remote group: %d tools, %v", len(tools), err)
	}
}

// TestSSHTimeoutKillsRemoteGroup checks that a timed-out remote command
// leaves nothing running on the server, background jobs included.
func TestSSHTimeoutKillsRemoteGroup(t *testing.T) {
	srv := startSSHD(t)
	dir := t.TempDir()
	c := srv.dial(t, dir)
	res, err := c.Exec().Exec(context.Background(), builtin.ExecRequest{Command: "sleep 62.4242 & sleep 62.4243; echo never", Timeout: 300 * time.Millisecond})
	if err != nil || !res.TimedOut || res.ExitCode != -1 {
		t.Fatalf("res %+v err %v, want a timeout", res, err)
	}
	proctest.WaitGone(t, "sleep", "62.4242")
	proctest.WaitGone(t, "sleep", "62.4243")
}

func TestSSHHostKeyChecked(t *testing.T) {
	srv := startSSHD(t)
	other := filepath.Join(t.TempDir(), "known_hosts")
	_, priv, _ := edKey()
	signer, _ := ssh.NewSignerFromKey(priv)
	line := "[127.0.0.1]:" + srv.Addr[strings.LastIndex(srv.Addr, ":")+1:] + " " + string(ssh.MarshalAuthorizedKey(signer.PublicKey()))
	if err := os.WriteFile(other, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sshops.Dial(context.Background(), sshops.Config{Addr: srv.Addr, User: srv.User, Signer: srv.Signer, KnownHosts: other, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "key mismatch") {
		t.Fatalf("dial with a wrong known host key: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	if _, err := sshops.Dial(context.Background(), sshops.Config{Addr: srv.Addr, User: srv.User, Signer: srv.Signer, KnownHosts: empty, Dir: t.TempDir()}); err == nil {
		t.Fatal("dial to an unknown host succeeded")
	}
	_, wrongUser, _ := edKey()
	ws, _ := ssh.NewSignerFromKey(wrongUser)
	if _, err := sshops.Dial(context.Background(), sshops.Config{Addr: srv.Addr, User: srv.User, Signer: ws, KnownHosts: srv.KnownHosts, Dir: t.TempDir()}); err == nil {
		t.Fatal("dial with an unauthorized key succeeded")
	}
}

func TestSSHKeyFile(t *testing.T) {
	srv := startSSHD(t)
	dir := t.TempDir()
	c, err := sshops.Dial(context.Background(), sshops.Config{Addr: srv.Addr, User: srv.User, KeyFile: srv.KeyFile, KnownHosts: srv.KnownHosts, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Files().Stat(context.Background(), "."); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := sshops.Dial(context.Background(), sshops.Config{Addr: srv.Addr, User: srv.User, KeyFile: filepath.Join(dir, "nope"), KnownHosts: srv.KnownHosts, Dir: dir}); err == nil {
		t.Fatal("dial with a missing key file succeeded")
	}
	if _, err := sshops.Dial(context.Background(), sshops.Config{Addr: srv.Addr, User: srv.User, Signer: srv.Signer, KnownHosts: srv.KnownHosts, Dir: filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("dial to a missing workspace succeeded")
	}
}
