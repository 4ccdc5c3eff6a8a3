package sandbox

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func found(file string) (string, error) { return "/usr/bin/" + file, nil }

func TestWrap(t *testing.T) {
	prog, args, err := Wrap(Policy{}, "/bin/tool", []string{"--a", "1"}, "/w")
	if err != nil || prog != "/bin/tool" || !reflect.DeepEqual(args, []string{"--a", "1"}) {
		t.Fatalf("none: %s %v %v", prog, args, err)
	}
	skill, ws := t.TempDir(), t.TempDir()
	prog, args, err = Wrap(Policy{Kind: Bubblewrap, Writable: []string{ws}, ReadOnly: []string{skill}, LookPath: found}, skill+"/bin/t", []string{"x"}, skill)
	if err != nil || prog != "/usr/bin/bwrap" {
		t.Fatalf("bubblewrap: %s %v", prog, err)
	}
	joined := strings.Join(args, " ")
	for _, want := range []string{"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop ALL", "--ro-bind /usr /usr",
		"--tmpfs /tmp", "--ro-bind " + skill + " " + skill, "--bind " + ws + " " + ws, "--remount-ro /", "--chdir " + skill, "-- " + skill + "/bin/t x"} {
		if !strings.Contains(joined, want) {
			t.Errorf("bwrap args %q lack %q", joined, want)
		}
	}
	for _, bad := range []string{"--share-net", "--ro-bind / /", "/etc/shadow", "/run", "/home"} {
		if strings.Contains(joined, bad) {
			t.Errorf("bwrap args %q contain %q", joined, bad)
		}
	}
	if strings.Index(joined, "--tmpfs /tmp") > strings.Index(joined, "--bind "+ws) {
		t.Errorf("binds must come after the tmpfs: %q", joined)
	}
	_, args, _ = Wrap(Policy{Kind: Bubblewrap, Network: true, LookPath: found}, "/t", nil, "")
	if !strings.Contains(strings.Join(args, " "), "--share-net") {
		t.Errorf("network policy without --share-net: %v", args)
	}
	_, args, _ = Wrap(Policy{Kind: Firejail, Writable: []string{ws}, LookPath: found}, "/t", nil, "")
	joined = strings.Join(args, " ")
	for _, want := range []string{"--noprofile", "--caps.drop=all", "--nonewprivs", "--noroot", "--seccomp", "--private-dev",
		"--read-only=/", "--whitelist=/etc/passwd", "--whitelist=" + ws, "--read-write=" + ws, "--net=none", "-- /t"} {
		if !strings.Contains(joined, want) {
			t.Errorf("firejail args %q lack %q", joined, want)
		}
	}
}

func TestWrapErrors(t *testing.T) {
	missing := func(string) (string, error) { return "", errors.New("nope") }
	if _, _, err := Wrap(Policy{Kind: Firejail, LookPath: missing}, "/t", nil, ""); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "firejail") {
		t.Errorf("missing firejail: %v", err)
	}
	if _, _, err := Wrap(Policy{Kind: "docker", LookPath: found}, "/t", nil, ""); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown kind: %v", err)
	}
	for _, d := range []string{"rel", "/", "/nonexistent/evoclaw/ws"} {
		if _, _, err := Wrap(Policy{Kind: Bubblewrap, Writable: []string{d}, LookPath: found}, "/t", nil, ""); err == nil {
			t.Errorf("writable dir %q accepted", d)
		}
	}
}
