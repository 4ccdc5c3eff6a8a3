//go:build linux

// Package sshdtest starts a real OpenSSH server for tests of the SSH
// backend and of what is built on it.
package sshdtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/evoclaw/evoclaw/skills/internal/peertest"
)

// Server is a real OpenSSH server on a loopback port, configured entirely by
// files in a temporary directory: its own host key, one authorized key,
// no passwords, no PAM.
type Server struct {
	// Addr is the server's 127.0.0.1:port.
	Addr string
	// KnownHosts is a known_hosts file listing the server's host key.
	KnownHosts string
	// Signer is the one key the server accepts; KeyFile holds it in
	// OpenSSH format.
	Signer  ssh.Signer
	KeyFile string
	// User is the account to log in as: the user running the test.
	User string
}

// Start starts sshd for the current user on a free loopback port and
// stops it when the test ends. A missing sshd skips the test loudly, or
// fails it under EVOCLAW_REQUIRE_PEERS=1 (peertest.Find).
func Start(t *testing.T) *Server {
	t.Helper()
	bin := peertest.Find(t, "sshd", "openssh-server")
	keygen := peertest.Find(t, "ssh-keygen", "openssh-client")
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// sshd running as root insists on its privilege separation
		// directory; the openssh-server service creates it at start.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("create /run/sshd for a root sshd: %v", err)
		}
	}
	dir := t.TempDir()
	hostKey := filepath.Join(dir, "host_ed25519")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "evoclaw test")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	authKeys := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authKeys, ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	conf := filepath.Join(dir, "sshd_config")
	sftpServer := "internal-sftp"
	err = os.WriteFile(conf, []byte(fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
AllowUsers %s
Subsystem sftp %s
LogLevel ERROR
`, port, hostKey, authKeys, filepath.Join(dir, "sshd.pid"), u.Username, sftpServer)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cmd := exec.Command(bin, "-D", "-e", "-f", conf)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // reaped here; the cleanup waits for it
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("sshd exited: %s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen on %s: %s", addr, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	pub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", port, pub)), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Server{Addr: addr, KnownHosts: knownHosts, Signer: signer, KeyFile: keyFile, User: u.Username}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
