package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWantErr(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom: disk full")
	for _, tc := range []struct {
		name   string
		err    error
		want   string
		wanted bool   // WantErr's result when it does not fail
		fatal  string // substring of the failure; "" = passes
	}{
		{"no error wanted, none", nil, "", false, ""},
		{"no error wanted, one", boom, "", false, "boom: disk full"},
		{"error wanted, it came", boom, "disk full", true, ""},
		{"error wanted, another came", boom, "quota", true, `mentioning "quota"`},
		{"error wanted, none came", nil, "quota", true, "err = <nil>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTB{TB: t}
			var got bool
			f.run(func(f *fakeTB) { got = WantErr(f, tc.err, tc.want) })
			if tc.fatal == "" {
				if f.fatal != "" || got != tc.wanted {
					t.Fatalf("WantErr = %v, fatal %q; want %v and no failure", got, f.fatal, tc.wanted)
				}
				return
			}
			if !strings.Contains(f.fatal, tc.fatal) {
				t.Fatalf("failure %q, want it to mention %q", f.fatal, tc.fatal)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	load := func(path string) (string, error) {
		b, err := os.ReadFile(path)
		if strings.Contains(string(b), "bad") {
			return "", errors.New("bad key in " + path)
		}
		return string(b), err
	}
	path := filepath.Join(t.TempDir(), "c.toml")
	if c, ok := LoadFile(t, path, "a = 1\n", "", load); !ok || c != "a = 1\n" {
		t.Fatalf("LoadFile = %q, %v", c, ok)
	}
	if _, ok := LoadFile(t, path, "bad = 1\n", "bad key", load); ok {
		t.Fatal("LoadFile of a refused file reported ok")
	}
	f := &fakeTB{TB: t}
	f.run(func(f *fakeTB) { LoadFile(f, path, "a = 1\n", "bad key", load) })
	if !strings.Contains(f.fatal, `mentioning "bad key"`) {
		t.Fatalf("a file loaded where an error was wanted: failure %q", f.fatal)
	}
}
