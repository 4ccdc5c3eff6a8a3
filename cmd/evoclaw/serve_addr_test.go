package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
)

// TestServeAddressInUse: a node whose listener's address is taken exits 1
// with an error that names the key of evoclaw.toml that moves that
// listener. Before, it said only "bind: address already in use", and no
// flag of serve moves a listener, so a second node on one machine (or a
// machine running mosquitto on 1883) left its user guessing.
func TestServeAddressInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	tests := []struct{ name, config, key, other string }{
		{"broker", fmt.Sprintf("[broker]\nlisten = %q\n[http]\nlisten = \"127.0.0.1:0\"\n", addr), "[broker] listen", "[http] listen"},
		{"http", fmt.Sprintf("[broker]\nlisten = \"127.0.0.1:0\"\n[http]\nlisten = %q\n", addr), "[http] listen", "[broker] listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			conf := filepath.Join(dir, "evoclaw.toml")
			if err := os.WriteFile(conf, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, evoclawtest.Binary(t), "serve", "--config", conf, "--data-dir", filepath.Join(dir, "data"))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("serve on a taken address: %v, want exit status 1\n%s", err, stderr.String())
			}
			last := stderr.String()[strings.LastIndex(strings.TrimSpace(stderr.String()), "evoclaw: "):]
			for _, want := range []string{addr, "address already in use", tt.key, "--config", "docs/CONFIG.md"} {
				if !strings.Contains(last, want) {
					t.Errorf("error lacks %q:\n%s", want, last)
				}
			}
			if strings.Contains(last, tt.other) {
				t.Errorf("error names %s, which is free:\n%s", tt.other, last)
			}
		})
	}
}
