package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

func TestConfigValidate(t *testing.T) {
	defer func(w int) { wordBits = w }(wordBits)
	wordBits = 64 // the rules of a 64-bit build; the 32-bit refusal is below
	lo := []string{"127.0.0.1:2379"}
	files := TLSFiles{CAFile: "ca.crt", CertFile: "n.crt", KeyFile: "n.key"}
	for _, tc := range []struct {
		name string
		in   Config
		err  string // "" means valid
	}{
		{"off", Config{}, ""},
		{"off with keys", Config{Port: 9000}, "cluster.etcd is empty"},
		{"defaults", Config{Etcd: []string{"127.0.0.1:2379"}}, ""},
		{"url endpoint", Config{Etcd: []string{"http://127.0.0.1:2379"}}, ""},
		{"localhost", Config{Etcd: []string{"http://localhost:2379"}}, ""},
		{"ipv6 loopback", Config{Etcd: []string{"[::1]:2379"}}, ""},
		{"ipv6 loopback url", Config{Etcd: []string{"http://[::1]:2379"}}, ""},
		{"plain beyond loopback", Config{Etcd: []string{"10.0.0.1:2379"}}, "plain HTTP beyond loopback"},
		{"plain url beyond loopback", Config{Etcd: []string{"http://10.0.0.2:2379"}}, "plain HTTP beyond loopback"},
		{"plain name", Config{Etcd: []string{"http://etcd.lan:2379"}}, "plain HTTP beyond loopback"},
		{"plain with tls", Config{Etcd: []string{"10.0.0.1:2379"}, TLS: files}, "plain HTTP beyond loopback"},
		{"second endpoint plain", Config{Etcd: []string{"https://10.0.0.1:2379", "10.0.0.2:2379"}, TLS: files}, "cluster.etcd[1]"},
		{"https without tls", Config{Etcd: []string{"https://10.0.0.1:2379"}}, "needs [cluster.tls]"},
		{"second endpoint https without tls", Config{Etcd: []string{"127.0.0.1:2379", "https://10.0.0.1:2379"}}, "cluster.etcd[1]"},
		{"https loopback without tls", Config{Etcd: []string{"https://127.0.0.1:2379"}}, "needs [cluster.tls]"},
		{"https", Config{Etcd: []string{"https://10.0.0.1:2379", "https://etcd.lan:2379"}, TLS: files}, ""},
		{"no port", Config{Etcd: []string{"127.0.0.1"}}, "want host:port"},
		{"bad port", Config{Etcd: []string{"127.0.0.1:99999"}}, "port: want 1-65535"},
		{"url path", Config{Etcd: []string{"http://h:2379/x"}}, "scheme://host:port only"},
		{"too many", Config{Etcd: make([]string, maxEndpoints+1)}, "endpoints, at most"},
		{"bad name", Config{Etcd: lo, Name: "a/b"}, "cluster.name"},
		{"bad node port", Config{Etcd: lo, Port: 70000}, "cluster.port"},
		{"advertise", Config{Etcd: lo, Advertise: "pi1.lan:8091"}, ""},
		{"bad advertise", Config{Etcd: lo, Advertise: "pi1.lan"}, "cluster.advertise"},
		{"state url", Config{Etcd: lo, StateURL: "http://127.0.0.1:8080"}, ""},
		{"state scheme", Config{Etcd: lo, StateURL: "ftp://x"}, "scheme"},
		{"state creds", Config{Etcd: lo, StateURL: "http://u:p@x:1"}, StateTokenEnv},
		{"history max age", Config{Etcd: lo, StateURL: "http://127.0.0.1:8080", HistoryMaxAge: 30 * 24 * time.Hour}, ""},
		{"history max age at its least", Config{Etcd: lo, StateURL: "http://127.0.0.1:8080", HistoryMaxAge: time.Hour}, ""},
		{"history max age too short", Config{Etcd: lo, StateURL: "http://127.0.0.1:8080", HistoryMaxAge: 59 * time.Minute}, "at least 1h0m0s"},
		{"history max age negative", Config{Etcd: lo, StateURL: "http://127.0.0.1:8080", HistoryMaxAge: -time.Hour}, "must not be negative"},
		{"history max age without state", Config{Etcd: lo, HistoryMaxAge: 48 * time.Hour}, "without state_url"},
		{"history max age without a cluster", Config{HistoryMaxAge: 48 * time.Hour}, "cluster.etcd is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.in
			if testenv.WantErr(t, c.Validate(), tc.err) {
				return
			}
			if c.Enabled() && (c.Name == "" || c.Host == "" || c.Port == 0) {
				t.Errorf("defaults not filled: %+v", c)
			}
		})
	}
}

// TestEtcdExposedNeedsTLS: an etcd endpoint beyond loopback in plain
// HTTP is refused, with or without [cluster.tls], by an error that says
// why and how to fix it.
func TestEtcdExposedNeedsTLS(t *testing.T) {
	defer func(w int) { wordBits = w }(wordBits)
	wordBits = 64
	for _, ep := range []string{"10.0.0.1:2379", "http://192.168.1.5:2379", "http://etcd.lan:2379", "0.0.0.0:2379", "[fe80::1]:2379"} {
		for _, tls := range []TLSFiles{{}, {CAFile: "ca.crt", CertFile: "n.crt", KeyFile: "n.key"}} {
			c := Config{Etcd: []string{ep}, TLS: tls}
			err := c.Validate()
			if !errors.Is(err, ErrEtcdExposed) {
				t.Fatalf("Validate(%s, tls %v) = %v, want ErrEtcdExposed", ep, !tls.IsZero(), err)
			}
			for _, says := range []string{ep, "add members", "https://", "[cluster.tls]", "--client-cert-auth --trusted-ca-file ca.crt --cert-file etcd.crt --key-file etcd.key",
				"evoclaw cluster cert --dir DIR etcd --host", "docs/CLUSTER.md"} {
				if !strings.Contains(err.Error(), says) {
					t.Errorf("error does not say %q: %v", says, err)
				}
			}
		}
	}
}

func TestNodeOf(t *testing.T) {
	for in, want := range map[string]string{
		"test@node1.ab12cd34": "node1",
		"node-2.ff":           "node-2",
		"plain":               "plain",
	} {
		if got := NodeOf(in); got != want {
			t.Errorf("NodeOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRefusedOn32Bit: a 32-bit build refuses an enabled cluster with an
// error that says why and what to do, and still accepts clustering off.
func TestRefusedOn32Bit(t *testing.T) {
	defer func(w int) { wordBits = w }(wordBits)
	wordBits = 32
	c := Config{Etcd: []string{"127.0.0.1:2379"}}
	if err := c.Validate(); err != ErrNot64Bit || !strings.Contains(err.Error(), "64-bit") {
		t.Fatalf("Validate on 32-bit = %v, want ErrNot64Bit", err)
	}
	off := Config{}
	if err := off.Validate(); err != nil {
		t.Fatalf("clustering off on 32-bit: %v", err)
	}
}
