package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestNodeClientsSayTheAPIIsOff: the node clients pointed at the data
// directory of a node that runs with [http] listen = "off" say so and name
// the key that turns the API on, whether the directory has no API address
// or one left from an earlier run with the API on. Before, they said to
// start `evoclaw serve`, which ran. A directory no node runs in still gets
// that advice.
func TestNodeClientsSayTheAPIIsOff(t *testing.T) {
	t.Setenv(envNode, "")
	t.Setenv(envToken, "")
	t.Setenv(envHTTPToken, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stale := "http://" + ln.Addr().String() // nothing listens there once closed
	ln.Close()
	for _, tt := range []struct {
		name    string
		running bool   // a node holds the audit database
		addr    string // the http-addr file's content; empty: none
		want    string
	}{
		{"running, no address", true, "", "[http] listen"},
		{"running, stale address", true, stale, "[http] listen"},
		{"stopped, no address", false, "", "start `evoclaw serve"},
		{"stopped, stale address", false, stale, "start `evoclaw serve`"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := sqlite.Open(filepath.Join(dir, orchestrator.AuditFile), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.running {
				t.Cleanup(func() { s.Close() })
			} else {
				s.Close() // the database is there, its lock is not held
			}
			if tt.addr != "" {
				if err := os.WriteFile(filepath.Join(dir, orchestrator.HTTPAddrFile), []byte(tt.addr+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, orchestrator.HTTPTokenFile), []byte("0123456789abcdef\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for _, args := range [][]string{{"status"}, {"jobs", "list"}, {"approvals", "list"}} {
				code, _, errOut := runArgs(append(args, "--data-dir", dir)...)
				if code == 0 || !strings.Contains(errOut, tt.want) {
					t.Errorf("%s: exit %d, want it to say %q:\n%s", args[0], code, tt.want, errOut)
				}
				if off := strings.Contains(errOut, "API off"); off != tt.running {
					t.Errorf("%s: says the API is off: %v, the node runs: %v\n%s", args[0], off, tt.running, errOut)
				}
			}
		})
	}
}
