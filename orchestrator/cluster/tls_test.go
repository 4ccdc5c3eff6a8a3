package cluster

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/cluster/certs"
)

// testPKI makes a CA in dir and a certificate for each node, and returns
// the [cluster.tls] of each node.
func testPKI(t testing.TB, dir string, nodes ...string) map[string]TLSFiles {
	t.Helper()
	ca, err := certs.WriteCA(dir, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]TLSFiles{}
	for _, n := range nodes {
		f, err := certs.WriteNode(dir, n, []string{"127.0.0.1"}, certs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out[n] = TLSFiles{CAFile: ca.Cert, CertFile: f.Cert, KeyFile: f.Key}
	}
	return out
}

// TestExposedHostNeedsTLS: an enabled cluster whose actor port listens
// beyond loopback is refused without [cluster.tls], with an error that
// says why and how to fix it; loopback hosts need no TLS, and any host
// may have it.
func TestExposedHostNeedsTLS(t *testing.T) {
	defer func(w int) { wordBits = w }(wordBits)
	wordBits = 64
	files := TLSFiles{CAFile: "ca.crt", CertFile: "n.crt", KeyFile: "n.key"}
	for _, tc := range []struct {
		host    string
		tls     TLSFiles
		exposed bool
	}{
		{"", TLSFiles{}, false}, // the default, 127.0.0.1
		{"127.0.0.1", TLSFiles{}, false},
		{"127.0.0.2", TLSFiles{}, false},
		{"::1", TLSFiles{}, false},
		{"localhost", TLSFiles{}, false},
		{"LocalHost", TLSFiles{}, false},
		{"0.0.0.0", TLSFiles{}, true},
		{"::", TLSFiles{}, true},
		{"10.0.0.11", TLSFiles{}, true},
		{"192.168.1.5", TLSFiles{}, true},
		{"fe80::1", TLSFiles{}, true},
		{"pi1.lan", TLSFiles{}, true},
		{"localhost.example.com", TLSFiles{}, true},
		{"0.0.0.0", files, false},
		{"10.0.0.11", files, false},
		{"127.0.0.1", files, false},
	} {
		t.Run(tc.host+map[bool]string{true: " tls"}[!tc.tls.IsZero()], func(t *testing.T) {
			c := Config{Etcd: []string{"127.0.0.1:2379"}, Host: tc.host, TLS: tc.tls}
			err := c.Validate()
			if !tc.exposed {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrExposed) {
				t.Fatalf("Validate = %v, want ErrExposed", err)
			}
			for _, says := range []string{tc.host, "tools", "[cluster.tls]", "docs/CLUSTER.md", `host = "127.0.0.1"`, "evoclaw cluster ca"} {
				if !strings.Contains(err.Error(), says) {
					t.Errorf("error does not say %q: %v", says, err)
				}
			}
		})
	}
}

// TestTLSFilesValidate: the three files go together, and a node alone
// must not name them.
func TestTLSFilesValidate(t *testing.T) {
	defer func(w int) { wordBits = w }(wordBits)
	wordBits = 64
	for _, tc := range []struct {
		name string
		in   Config
		err  string
	}{
		{"only ca", Config{Etcd: []string{"127.0.0.1:1"}, TLS: TLSFiles{CAFile: "ca.crt"}}, "cert_file and key_file not set"},
		{"no key", Config{Etcd: []string{"127.0.0.1:1"}, TLS: TLSFiles{CAFile: "ca.crt", CertFile: "n.crt"}}, "key_file not set"},
		{"no ca", Config{Etcd: []string{"127.0.0.1:1"}, TLS: TLSFiles{CertFile: "n.crt", KeyFile: "n.key"}}, "ca_file not set"},
		{"off with tls", Config{TLS: TLSFiles{CAFile: "ca.crt"}}, "cluster.etcd is empty"},
		{"all three", Config{Etcd: []string{"127.0.0.1:1"}, TLS: TLSFiles{CAFile: "a", CertFile: "b", KeyFile: "c"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.WantErr(t, tc.in.Validate(), tc.err)
		})
	}
}

// TestTLSFilesLoad: good files give TLS 1.3 configurations that verify
// peers; every bad file is a start error naming its key and its path.
func TestTLSFilesLoad(t *testing.T) {
	dir := t.TempDir()
	good := testPKI(t, dir, "n1", "n2")["n1"]
	other := testPKI(t, filepath.Join(dir, "other"), "x")["x"]
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.crt")
	n2 := certs.NodeFiles(dir, "n2")
	now := time.Now()
	for _, tc := range []struct {
		name string
		f    TLSFiles
		now  time.Time
		err  []string // every part must be in the error; none means valid
	}{
		{"good", good, now, nil},
		{"missing ca", TLSFiles{missing, good.CertFile, good.KeyFile}, now, []string{"cluster.tls.ca_file", missing}},
		{"ca not PEM", TLSFiles{garbage, good.CertFile, good.KeyFile}, now, []string{"cluster.tls.ca_file", garbage, "no PEM certificate"}},
		{"missing cert", TLSFiles{good.CAFile, missing, good.KeyFile}, now, []string{"cluster.tls.cert_file", missing}},
		{"missing key", TLSFiles{good.CAFile, good.CertFile, missing}, now, []string{"cluster.tls.key_file", missing}},
		{"cert not PEM", TLSFiles{good.CAFile, garbage, good.KeyFile}, now, []string{"cluster.tls.cert_file", garbage}},
		{"key of another node", TLSFiles{good.CAFile, good.CertFile, n2.Key}, now, []string{"cert_file " + good.CertFile, "key_file " + n2.Key, "does not match"}},
		{"cert of another CA", TLSFiles{good.CAFile, other.CertFile, other.KeyFile}, now, []string{"cluster.tls.cert_file " + other.CertFile, "ca_file " + good.CAFile, "unknown authority"}},
		{"expired", good, now.Add(certs.DefaultNodeValidity + time.Hour), []string{"cluster.tls.cert_file", "expired"}},
		{"partial", TLSFiles{CAFile: good.CAFile}, now, []string{"go together"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, client, err := tc.f.Load(tc.now)
			if len(tc.err) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if server.MinVersion != tls.VersionTLS13 || client.MinVersion != tls.VersionTLS13 || server.ClientAuth != tls.RequireAndVerifyClientCert {
					t.Fatalf("server %+v / client %+v: want TLS 1.3 and a required client certificate", server, client)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load succeeded, want an error mentioning %q", tc.err)
			}
			for _, part := range tc.err {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not mention %q", err, part)
				}
			}
		})
	}
}

// TestTLSHandshakes: two nodes of one CA complete a mutual handshake,
// either side dialing, without any name check (the dialed address is in
// no certificate); a node of another CA fails it whichever side it is on,
// and so does a client without a certificate.
func TestTLSHandshakes(t *testing.T) {
	dir := t.TempDir()
	pki := testPKI(t, dir, "n1", "n2")
	other := testPKI(t, filepath.Join(dir, "other"), "x")["x"]
	load := func(f TLSFiles) (server, client *tls.Config) {
		s, c, err := f.Load(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return s, c
	}
	s1, _ := load(pki["n1"])
	_, c2 := load(pki["n2"])
	sx, cx := load(other)
	noCert := c2.Clone()
	noCert.Certificates = nil
	for _, tc := range []struct {
		name           string
		server, client *tls.Config
		ok             bool
	}{
		{"same CA", s1, c2, true},
		{"client of another CA", s1, cx, false},
		{"server of another CA", sx, c2, false},
		{"client without a certificate", s1, noCert, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := handshake(t, tc.server, tc.client)
			if tc.ok && err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("handshake succeeded")
			}
		})
	}
}

// handshake runs a TLS handshake over loopback TCP, the client naming
// "10.9.8.7" (an address in no certificate), and returns the first error
// of either side, the client's after it has read from the server (in TLS
// 1.3 a client learns that the server refused its certificate only then).
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		if err = c.(*tls.Conn).Handshake(); err == nil {
			_, err = c.Write([]byte{1})
		}
		srvErr <- err
	}()
	client = client.Clone()
	client.ServerName = "10.9.8.7"
	c, err := tls.Dial("tcp", l.Addr().String(), client)
	if err == nil {
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if serr := <-srvErr; err == nil {
		err = serr
	}
	return err
}
