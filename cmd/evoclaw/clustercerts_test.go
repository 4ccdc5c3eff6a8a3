package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
)

// TestClusterCertCommands follows an operator without a PKI: `cluster
// ca` then `cluster cert` for a node write the files (keys 0600) and
// refuse to write them again; the [cluster.tls] lines `cluster cert`
// prints, pasted into an evoclaw.toml beside the files, make a node that
// listens on 0.0.0.0 valid and its files load, while the same file
// without them is refused.
func TestClusterCertCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	out, _ := runCLI(t, 0, "cluster", "ca", "--dir", dir)
	if !strings.Contains(out, filepath.Join(dir, "ca.crt")) || !strings.Contains(out, filepath.Join(dir, "ca.key")) {
		t.Errorf("cluster ca output:\n%s", out)
	}
	_, errOut := runCLI(t, 1, "cluster", "ca", "--dir", dir)
	if !strings.Contains(errOut, "file exists") {
		t.Errorf("cluster ca again: %s", errOut)
	}
	out, _ = runCLI(t, 0, "cluster", "cert", "--dir", dir, "pi1", "--host", "10.0.0.11", "--host", "pi1.lan,::1", "--days", "30")
	runCLI(t, 0, "cluster", "cert", "--dir", dir, "pi2")
	_, errOut = runCLI(t, 1, "cluster", "cert", "--dir", dir, "pi1")
	if !strings.Contains(errOut, "file exists") {
		t.Errorf("cluster cert again: %s", errOut)
	}
	for _, name := range []string{"ca.key", "pi1.key", "pi2.key"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", name, err)
		}
	}
	// The same files serve etcd's server (the walkthrough of CLUSTER.md
	// makes one named etcd): the lines say how etcd takes them. Before,
	// they told etcd's certificate to go into "its evoclaw.toml".
	if etcd := "--client-cert-auth --trusted-ca-file ca.crt --cert-file pi1.crt --key-file pi1.key\n"; !strings.Contains(out, etcd) {
		t.Errorf("cluster cert does not say how etcd takes the files (%q):\n%s", etcd, out)
	}
	i := strings.Index(out, "[cluster.tls]")
	if i < 0 {
		t.Fatalf("cluster cert prints no [cluster.tls]:\n%s", out)
	}
	base := "node_id = \"pi1\"\n[cluster]\netcd = [\"https://10.0.0.1:2379\"]\nhost = \"0.0.0.0\"\nadvertise = \"10.0.0.11:8091\"\n"
	conf := filepath.Join(dir, "evoclaw.toml")
	writeTestFile(t, conf, base+out[i:])
	c, err := orchestrator.LoadConfig(conf)
	if err != nil {
		t.Fatalf("the printed lines: %v\n%s", err, out[i:])
	}
	_, client, err := c.Cluster.TLS.Load(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if leaf := client.Certificates[0].Leaf; leaf.Subject.CommonName != "pi1" || leaf.NotAfter.After(time.Now().Add(31*24*time.Hour)) || len(leaf.IPAddresses) != 2 || len(leaf.DNSNames) != 1 {
		t.Errorf("pi1's certificate: %v until %v, IPs %v, names %v", leaf.Subject, leaf.NotAfter, leaf.IPAddresses, leaf.DNSNames)
	}
	writeTestFile(t, conf, base)
	if _, err := orchestrator.LoadConfig(conf); !errors.Is(err, cluster.ErrExposed) {
		t.Errorf("host 0.0.0.0 without [cluster.tls]: %v, want ErrExposed", err)
	}

	for _, args := range [][]string{
		{"cluster"},
		{"cluster", "frob"},
		{"cluster", "ca"},                 // no --dir
		{"cluster", "cert", "--dir", dir}, // no node
		{"cluster", "cert", "--dir", dir, "pi3", "pi4"}, // two nodes
		{"cluster", "cert", "--dir", dir, "pi3", "--days", "-1"},
	} {
		runCLI(t, 2, args...)
	}
	if _, err := os.Stat(filepath.Join(dir, "pi3.key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused command wrote pi3.key: %v", err)
	}
}
