//go:build linux

// Package sshdtest starts a real OpenSSH server for tests of the SSH
// backend and of what is built on it.
package sshdtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/evoclaw/evoclaw/edge/testenv"
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

// configFormat is the whole sshd configuration: port, host key file,
// authorized keys file, pid file, user and sftp server, in that order.
const configFormat = `Port %d
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
`

// Start starts sshd for the current user on a free loopback port and
// stops it when the test ends. A missing sshd skips the test loudly, or
// fails it under EVOCLAW_REQUIRE_PEERS=1 (testenv.Find).
func Start(t *testing.T) *Server {
	t.Helper()
	bin := testenv.Find(t, "sshd", "openssh-server")
	keygen := testenv.Find(t, "ssh-keygen", "openssh-client")
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
	conf := filepath.Join(dir, "sshd_config")
	sftpServer := "internal-sftp"
	sshd := testenv.Start(t, testenv.Spec{
		Name: "sshd",
		Path: bin,
		Args: func(port int) []string {
			config := fmt.Sprintf(configFormat, port, hostKey, authKeys, filepath.Join(dir, "sshd.pid"), u.Username, sftpServer)
			if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"-D", "-e", "-f", conf}
		},
	})
	pub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", sshd.Port(), pub)), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Server{Addr: sshd.Addr(), KnownHosts: knownHosts, Signer: signer, KeyFile: keyFile, User: u.Username}
}
