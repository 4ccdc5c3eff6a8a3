package tomlconf

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type conf struct {
	Dir  string `toml:"dir"`
	Sect struct {
		N int `toml:"n"`
	} `toml:"sect"`
}

func write(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.toml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDecodeFile(t *testing.T) {
	path := write(t, "dir = \"data\"\n[sect]\nn = 3\n")
	var c conf
	dir, err := DecodeFile(path, &c)
	if err != nil || c.Dir != "data" || c.Sect.N != 3 || dir != filepath.Dir(path) {
		t.Fatalf("DecodeFile = %q, %v; %+v", dir, err, c)
	}
	if got := Resolve(dir, c.Dir); got != filepath.Join(filepath.Dir(path), "data") {
		t.Fatalf("Resolve = %q", got)
	}
}

func TestDecodeFileRefusesUnknownKeys(t *testing.T) {
	_, err := DecodeFile(write(t, "dri = \"x\"\n[sect]\nn = 1\nm = 2\n"), &conf{})
	if err == nil || !strings.HasPrefix(err.Error(), "unknown keys: dri (did you mean dir?), sect.m (known here: n);") {
		t.Fatalf("err = %v, want both unknown keys named, with what they could be", err)
	}
	if _, err := DecodeFile(write(t, "dir = \n"), &conf{}); err == nil {
		t.Fatal("a syntax error decoded")
	}
	if _, err := DecodeFile(filepath.Join(t.TempDir(), "none.toml"), &conf{}); err == nil || !strings.Contains(err.Error(), "none.toml") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestDecode(t *testing.T) {
	var c conf
	if err := Decode("[sect]\nn = 2\n", &c); err != nil || c.Sect.N != 2 {
		t.Fatalf("Decode: %v %+v", err, c)
	}
	if err := Decode("[sect]\nm = 2\n", &c); err == nil || !strings.HasPrefix(err.Error(), "unknown keys: sect.m ") {
		t.Fatalf("err = %v, want the unknown key named", err)
	}
}

func TestResolve(t *testing.T) {
	for p, want := range map[string]string{"": "", "/abs/f": "/abs/f", "rel/f": "/base/rel/f", "../up": "/up"} {
		if got := Resolve("/base", p); got != want {
			t.Errorf("Resolve(/base, %q) = %q, want %q", p, got, want)
		}
	}
}

func ExampleResolve() {
	// Paths named in /etc/evoclaw/agent.toml:
	fmt.Println(Resolve("/etc/evoclaw", "keys/id_ed25519"))
	fmt.Println(Resolve("/etc/evoclaw", "/var/lib/evoclaw"))
	// Output:
	// /etc/evoclaw/keys/id_ed25519
	// /var/lib/evoclaw
}
