//go:build linux

package sshops_test

import (
	"context"
	"testing"

	"github.com/evoclaw/evoclaw/skills/internal/sshdtest"
	"github.com/evoclaw/evoclaw/skills/internal/sshops"
)

// sshd is the shared test server with a dial helper for this package.
type sshd struct{ *sshdtest.Server }

func startSSHD(t *testing.T) *sshd { return &sshd{sshdtest.Start(t)} }

// dial connects to the server's workspace dir.
func (s *sshd) dial(t *testing.T, dir string) *sshops.Client {
	t.Helper()
	c, err := sshops.Dial(context.Background(), sshops.Config{Addr: s.Addr, User: s.User, Signer: s.Signer, KnownHosts: s.KnownHosts, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
