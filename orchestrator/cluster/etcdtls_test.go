//go:build !nocluster

package cluster

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// clientTLS is the client side of f's [cluster.tls], as a node dials etcd.
func clientTLS(t *testing.T, f TLSFiles) *tls.Config {
	t.Helper()
	_, client, err := f.Load(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// TestEtcdMembershipTLS: against an etcd that serves https only and lets
// in only certificates of the cluster's CA (--client-cert-auth), members
// with their node's [cluster.tls] find it healthy, register, list and
// watch each other (a join, a keep-alive, a graceful leave); a member
// presenting no certificate, one of another CA, or trusting another CA
// fails at start, naming the endpoint and the certificate at fault.
func TestEtcdMembershipTLS(t *testing.T) {
	dir := t.TempDir()
	pki := testPKI(t, dir, "etcd", "n1", "n2")
	foreign := testPKI(t, filepath.Join(dir, "other"), "x")["x"]
	etcd := testenv.StartEtcdTLS(t, pki["etcd"].CAFile, pki["etcd"].CertFile, pki["etcd"].KeyFile)
	ep := "https://" + etcd.Addr()
	n1, n2 := clientTLS(t, pki["n1"]), clientTLS(t, pki["n2"])

	if err := probeEtcd([]string{ep}, n1); err != nil {
		t.Fatalf("probe with n1's certificate: %v", err)
	}
	a, sa := memberTLS(t, []string{ep}, n1, "lab", "lab@a.1")
	sa.waitFor(t, 10*time.Second, "a", "lab@a.1")
	b, sb := memberTLS(t, []string{ep}, n2, "lab", "lab@b.1")
	sa.waitFor(t, 10*time.Second, "a", "lab@a.1", "lab@b.1") // through a's watch
	sb.waitFor(t, 10*time.Second, "b", "lab@a.1", "lab@b.1")
	if _, ok := keyInTLS(t, ep, n1, "/evoclaw/lab/lab@b.1"); !ok {
		t.Fatal("b's key is not in etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := a.renew(ctx) // the lease keep-alive, a stream of the gateway
	cancel()
	if err != nil {
		t.Fatalf("a's keep-alive over https: %v", err)
	}
	if err := b.shutdown(true); err != nil {
		t.Fatalf("b leaves: %v", err)
	}
	sa.waitFor(t, 10*time.Second, "a", "lab@a.1")

	noCert := n1.Clone()
	noCert.Certificates = nil
	foreignCert := n1.Clone()
	foreignCert.Certificates = clientTLS(t, foreign).Certificates
	for _, tc := range []struct {
		name string
		tls  *tls.Config
		says string // in the error, besides the endpoint
	}{
		{"no certificate", noCert, "this node's certificate"},
		{"certificate of another CA", foreignCert, "this node's certificate"},
		{"trusting another CA", clientTLS(t, foreign), "etcd's certificate is not one the cluster's CA"},
		{"no TLS", nil, "etcd's certificate is not one the cluster's CA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := probeEtcd([]string{ep}, tc.tls)
			if err == nil || !strings.Contains(err.Error(), ep) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("probe = %v, want an error naming %s and saying %q", err, ep, tc.says)
			}
			m := newEtcdMembership([]string{ep}, tc.tls, etcdBaseKey, "lab", testNode("lab@x.1"), func([]etcdNode) {}, nil)
			err = m.start()
			_ = m.shutdown(false)
			t.Logf("start: %v", err)
			if err == nil || !strings.Contains(err.Error(), ep) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("start = %v, want an error naming %s and saying %q", err, ep, tc.says)
			}
		})
	}
	if got := sa.now(); len(got) != 1 {
		t.Errorf("a sees %v after the refused members, want only itself", got)
	}
}
