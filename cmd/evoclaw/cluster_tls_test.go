//go:build !nocluster

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
	"github.com/evoclaw/evoclaw/orchestrator/cluster/clustertest"
)

// TestClusterMutualTLS: two `evoclaw serve` nodes listening on 0.0.0.0
// with [cluster.tls] made by `evoclaw cluster ca` and `cluster cert`, and
// reaching etcd over https with those certificates (etcd lets in only
// certificates of the cluster's CA: --client-cert-auth), form a cluster,
// and a chat taken by either node runs on the conversation's owner, the
// other node, through the actor port; a stranger without a certificate,
// in plain text or with a certificate of another CA cannot get a connect
// request accepted by a node, while the same probe with a member's
// certificate can.
func TestClusterMutualTLS(t *testing.T) {
	pki := filepath.Join(t.TempDir(), "pki")
	runCLI(t, 0, "cluster", "ca", "--dir", pki)
	runCLI(t, 0, "cluster", "cert", "--dir", pki, "etcd", "--host", "127.0.0.1")
	etcd := testenv.StartEtcdTLS(t, filepath.Join(pki, "ca.crt"), filepath.Join(pki, "etcd.crt"), filepath.Join(pki, "etcd.key"))
	tc := newTestClusterOn(t, 2, "", etcd, "https://"+etcd.Addr())
	// A model to answer the chats (a node with no [llm] refuses them).
	transcript := countingTranscript(t, t.TempDir(), 1)
	files := map[string]cluster.TLSFiles{}
	for i, nd := range tc.nodes {
		runCLI(t, 0, "cluster", "cert", "--dir", pki, nd.id, "--host", "127.0.0.1")
		f := cluster.TLSFiles{CAFile: filepath.Join(pki, "ca.crt"), CertFile: filepath.Join(pki, nd.id+".crt"), KeyFile: filepath.Join(pki, nd.id+".key")}
		files[nd.id] = f
		// [cluster] is the file's last section: host and advertise join
		// it, [cluster.tls] and [llm] follow.
		appendFile(t, nd.conf, fmt.Sprintf("host = \"0.0.0.0\"\nadvertise = %q\n[cluster.tls]\nca_file = %q\ncert_file = %q\nkey_file = %q\n[llm]\nprovider = \"scripted\"\ntranscript = %q\n",
			tc.actorAddr(i), f.CAFile, f.CertFile, f.KeyFile, transcript))
	}
	tc.startAll()

	addrs := []string{tc.actorAddr(0), tc.actorAddr(1)}
	for via := range tc.nodes {
		owner := 1 - via
		conv := ""
		for k := 0; k < 100 && conv == ""; k++ {
			id := fmt.Sprintf("tls-%d-%d", via, k)
			if o, err := cluster.OwnerAmong(addrs, id, "conversation"); err != nil {
				t.Fatal(err)
			} else if o == addrs[owner] {
				conv = id
			}
		}
		if conv == "" {
			t.Fatalf("no conversation of 100 owned by %s", tc.nodes[owner].id)
		}
		if got := tc.chat(via, conv, "hello over TLS"); got == "" {
			t.Fatalf("chat %s through %s: empty answer", conv, tc.nodes[via].id)
		}
		for i, nd := range tc.nodes {
			rows := query(t, filepath.Join(nd.dir, orchestrator.AuditFile), fmt.Sprintf("SELECT COUNT(*) FROM messages WHERE conversation_id = '%s'", conv))
			if n := rows[0][0].(int64); (i == owner) != (n > 0) {
				t.Errorf("%s taken by %s, owned by %s: %d messages in %s's audit", conv, tc.nodes[via].id, tc.nodes[owner].id, n, nd.id)
			}
		}
	}

	_, member, err := files["node2"].Load(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	runCLI(t, 0, "cluster", "ca", "--dir", other)
	runCLI(t, 0, "cluster", "cert", "--dir", other, "intruder")
	_, foreign, err := cluster.TLSFiles{CAFile: filepath.Join(other, "ca.crt"), CertFile: filepath.Join(other, "intruder.crt"), KeyFile: filepath.Join(other, "intruder.key")}.Load(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	clustertest.CheckPort(t, addrs[0], member, foreign)
}

// TestClusterServeRefusesExposedPort: `evoclaw serve` with a cluster
// actor port on 0.0.0.0 and no [cluster.tls] exits saying why and what to
// do, before it dials anything; so does one with an https etcd endpoint
// and no [cluster.tls]; with [cluster.tls] naming a file that is not
// there it exits naming the key and the file.
func TestClusterServeRefusesExposedPort(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "evoclaw.toml")
	base := "[broker]\nlisten = \"127.0.0.1:0\"\nallow_anonymous = true\n[http]\nlisten = \"127.0.0.1:0\"\n[cluster]\netcd = [\"127.0.0.1:1\"]\nhost = \"0.0.0.0\"\n"
	writeTestFile(t, conf, base)
	code, _, errOut := runBinary(t, "", "serve", "--config", conf, "--data-dir", filepath.Join(dir, "node"))
	for _, want := range []string{`refusing cluster.host "0.0.0.0" without [cluster.tls]`, "run chats with its tools", "evoclaw cluster ca", `host = "127.0.0.1"`} {
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("serve exit %d, stderr lacks %q:\n%s", code, want, errOut)
		}
	}
	writeTestFile(t, conf, strings.Replace(base, "etcd = [\"127.0.0.1:1\"]\nhost = \"0.0.0.0\"", "etcd = [\"https://127.0.0.1:1\"]", 1))
	code, _, errOut = runBinary(t, "", "serve", "--config", conf, "--data-dir", filepath.Join(dir, "node"))
	if code == 0 || !strings.Contains(errOut, `"https://127.0.0.1:1": an https endpoint needs [cluster.tls]`) {
		t.Errorf("serve with an https etcd and no [cluster.tls]: exit %d:\n%s", code, errOut)
	}
	writeTestFile(t, conf, base+"[cluster.tls]\nca_file = \"missing-ca.crt\"\ncert_file = \"n.crt\"\nkey_file = \"n.key\"\n")
	code, _, errOut = runBinary(t, "", "serve", "--config", conf, "--data-dir", filepath.Join(dir, "node"))
	if code == 0 || !strings.Contains(errOut, "cluster.tls.ca_file") || !strings.Contains(errOut, filepath.Join(dir, "missing-ca.crt")) {
		t.Errorf("serve with a missing ca_file: exit %d:\n%s", code, errOut)
	}
}

// appendFile appends s to the file at path.
func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
