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
	prog, args, err = Wrap(Policy{Kind: Bubblewrap, Writable: []string{"/ws"}, ReadOnly: []string{"/tmp/skill"}, LookPath: found}, "/tmp/skill/bin/t", []string{"x"}, "/tmp/skill")
	if err != nil || prog != "/usr/bin/bwrap" {
		t.Fatalf("bubblewrap: %s %v", prog, err)
	}
	joined := strings.Join(args, " ")
	for _, want := range []string{"--ro-bind / /", "--unshare-all", "--die-with-parent", "--tmpfs /tmp", "--ro-bind /tmp/skill /tmp/skill", "--bind /ws /ws", "--chdir /tmp/skill", "-- /tmp/skill/bin/t x"} {
		if !strings.Contains(joined, want) {
			t.Errorf("bwrap args %q lack %q", joined, want)
		}
	}
	if strings.Contains(joined, "--share-net") || strings.Contains(joined, "--new-session") {
		t.Errorf("bwrap args %q: network shared or new session", joined)
	}
	if strings.Index(joined, "--tmpfs /tmp") > strings.Index(joined, "--bind /ws") {
		t.Errorf("binds must come after the tmpfs: %q", joined)
	}
	_, args, _ = Wrap(Policy{Kind: Bubblewrap, Network: true, LookPath: found}, "/t", nil, "")
	if !strings.Contains(strings.Join(args, " "), "--share-net") {
		t.Errorf("network policy without --share-net: %v", args)
	}
	_, args, _ = Wrap(Policy{Kind: Firejail, Writable: []string{"/ws"}, LookPath: found}, "/t", nil, "")
	if got := strings.Join(args, " "); got != "--quiet --noprofile --read-only=/ --read-write=/ws --net=none -- /t" {
		t.Errorf("firejail args = %q", got)
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
	if _, _, err := Wrap(Policy{Kind: Bubblewrap, Writable: []string{"rel"}, LookPath: found}, "/t", nil, ""); err == nil {
		t.Error("relative writable dir accepted")
	}
}
