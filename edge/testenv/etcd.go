package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// etcdStartTimeout bounds an etcd start: it elects itself leader first.
const etcdStartTimeout = 30 * time.Second

// StartEtcd starts a one-member etcd (Debian's etcd-server) on a free
// loopback client port with a fresh data directory, kept across
// Restart. Without etcd the test is skipped, or fails when
// EVOCLAW_REQUIRE_PEERS=1.
func StartEtcd(t testing.TB) *Process {
	t.Helper()
	return startEtcd(t, "http")
}

// StartEtcdTLS is StartEtcd serving its client port over TLS only
// (https://127.0.0.1:port, "https://"+Addr()) with the certificate and
// key given, and letting in only clients whose certificate the CA in
// caFile signed (--client-cert-auth). A certificate of `evoclaw cluster
// cert` serves; --host 127.0.0.1 lets tools that check names (etcdctl,
// curl) reach it too.
func StartEtcdTLS(t testing.TB, caFile, certFile, keyFile string) *Process {
	t.Helper()
	return startEtcd(t, "https", "--client-cert-auth", "--trusted-ca-file", caFile, "--cert-file", certFile, "--key-file", keyFile)
}

// startEtcd starts etcd with its client port in scheme (http or https)
// and the extra arguments given.
func startEtcd(t testing.TB, scheme string, extra ...string) *Process {
	t.Helper()
	path := Find(t, "etcd", "etcd-server")
	dir := t.TempDir()
	return Start(t, Spec{
		Name: "etcd",
		Path: path,
		Args: func(port int) []string {
			client := fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
			peer := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
			return append([]string{"--name", "evoclaw-test", "--data-dir", filepath.Join(dir, "data"),
				"--listen-client-urls", client, "--advertise-client-urls", client,
				"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
				"--initial-cluster", "evoclaw-test=" + peer}, extra...)
		},
		// It accepts connections before it has a leader; it logs
		// "ready to serve client requests" once it answers them.
		Ready: func(addr string, log []byte) error {
			if !bytes.Contains(log, []byte("ready to serve client requests")) {
				return errors.New(`no "ready to serve client requests" in its log yet`)
			}
			return Accepts(addr)
		},
		StartTimeout: etcdStartTimeout,
	})
}
