// Package sshops is a backend of the built-in tools on a remote machine:
// FileOps over SFTP and ExecOps over SSH sessions, through one
// authenticated SSH connection (golang.org/x/crypto/ssh with known-hosts
// checking and public-key authentication; github.com/pkg/sftp for files).
//
// # Jail
//
// Paths are confined to the remote workspace directory. A remote server
// offers nothing like openat with RESOLVE_BENEATH, so the jail checks each
// existing path component with lstat and resolves every symlink it meets
// with the server's realpath before the operation: a symlink leading out
// is refused. This is check-then-use: a process on the remote machine
// racing to swap a component for a symlink could win. On a remote host the
// account the tools log in as is the boundary; give it access to the
// workspace only.
//
// # Commands
//
// sshd starts every command as a session leader, so the remote shell's
// pid is its process group. The remote wrapper reports that pid first on
// stderr; at the timeout or when the context ends, a second session runs
// kill -KILL on the whole group, so nothing the command started survives.
//
// # Concurrency
//
// A Client and its FileOps and ExecOps are safe for concurrent use. Close
// ends the connection; calls after it fail.
package sshops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// DefaultDialTimeout bounds connecting and the SSH handshake.
const DefaultDialTimeout = 10 * time.Second

// Config says how to reach the remote workspace. Addr, User, a key,
// KnownHosts and Dir are required.
type Config struct {
	// Addr is host:port of the SSH server.
	Addr string
	// User is the remote account.
	User string
	// KeyFile is a private key file (OpenSSH or PEM, unencrypted); ignored
	// when Signer is set.
	KeyFile string
	// Signer authenticates the user; nil means the key in KeyFile.
	Signer ssh.Signer
	// KnownHosts is an OpenSSH known_hosts file that must list the
	// server's host key; there is no option to skip the check.
	KnownHosts string
	// Dir is the absolute remote workspace directory.
	Dir string
	// DialTimeout bounds connecting; zero means DefaultDialTimeout.
	DialTimeout time.Duration
}

// Client is one SSH connection to a remote workspace.
type Client struct {
	ssh  *ssh.Client
	sftp *sftp.Client
	dir  string // remote workspace as given
	real string // remote workspace with symlinks resolved

	closeOnce sync.Once
	closeErr  error
}

// Dial connects, checks the host key against KnownHosts, authenticates and
// opens SFTP. The workspace directory must exist.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Addr == "" || cfg.User == "" || cfg.KnownHosts == "" || !path.IsAbs(cfg.Dir) {
		return nil, errors.New("ssh backend: Addr, User, KnownHosts and an absolute Dir are required")
	}
	signer := cfg.Signer
	if signer == nil {
		key, err := os.ReadFile(cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("ssh backend: read key: %w", err)
		}
		if signer, err = ssh.ParsePrivateKey(key); err != nil {
			return nil, fmt.Errorf("ssh backend: parse key %s: %w", cfg.KeyFile, err)
		}
	}
	hostKeys, err := knownhosts.New(cfg.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("ssh backend: known hosts: %w", err)
	}
	timeout := cfg.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("ssh backend: dial %s: %w", cfg.Addr, err)
	}
	if dl, ok := dctx.Deadline(); ok {
		conn.SetDeadline(dl) // the handshake must finish in time too
	}
	sc, chans, reqs, err := ssh.NewClientConn(conn, cfg.Addr, &ssh.ClientConfig{
		User:            cfg.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hostKeys,
		Timeout:         timeout,
	})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh backend: handshake with %s: %w", cfg.Addr, err)
	}
	conn.SetDeadline(time.Time{})
	c := &Client{ssh: ssh.NewClient(sc, chans, reqs), dir: path.Clean(cfg.Dir)}
	if c.sftp, err = sftp.NewClient(c.ssh); err != nil {
		c.ssh.Close()
		return nil, fmt.Errorf("ssh backend: start sftp: %w", err)
	}
	if c.real, err = c.sftp.RealPath(c.dir); err != nil {
		c.Close()
		return nil, fmt.Errorf("ssh backend: workspace %s: %w", c.dir, err)
	}
	if fi, err := c.sftp.Stat(c.real); err != nil || !fi.IsDir() {
		c.Close()
		return nil, fmt.Errorf("ssh backend: workspace %s is not a directory (%v)", c.dir, err)
	}
	return c, nil
}

// Close closes SFTP and the connection; it is idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		err1 := c.sftp.Close()
		err2 := c.ssh.Close()
		c.closeErr = errors.Join(err1, err2)
	})
	return c.closeErr
}

// Files returns FileOps on the remote workspace.
func (c *Client) Files() *Files { return &Files{c: c} }

// Exec returns ExecOps in the remote workspace.
func (c *Client) Exec() *Exec { return &Exec{c: c} }
