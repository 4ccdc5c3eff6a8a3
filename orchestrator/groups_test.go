package orchestrator

import (
	"strings"
	"testing"
)

func TestGroupsConfig(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"ok", "[[groups]]\nname = \"sensors\"\nmembers = [\"pi1\", \"pi2\", \"rack-*\"]\ntools = [\"temp\"]\n", ""},
		{"two groups", "[[groups]]\nname = \"a\"\nmembers = [\"x\"]\n[[groups]]\nname = \"b\"\nmembers = [\"x\"]\n", ""},
		{"no name", "[[groups]]\nmembers = [\"pi1\"]\n", "groups[0]: name is required"},
		{"bad name", "[[groups]]\nname = \"sen sors\"\nmembers = [\"pi1\"]\n", "groups[0] (sen sors): name:"},
		{"separator in name", "[[groups]]\nname = \"a__b\"\nmembers = [\"pi1\"]\n", "must not hold \"__\" or end with '_'"},
		{"trailing underscore in name", "[[groups]]\nname = \"ab_\"\nmembers = [\"pi1\"]\n", "must not hold \"__\" or end with '_'"},
		{"twice", "[[groups]]\nname = \"a\"\nmembers = [\"x\"]\n[[groups]]\nname = \"a\"\nmembers = [\"y\"]\n", "groups[1] (a): name declared twice"},
		{"no members", "[[groups]]\nname = \"a\"\n", "members is empty"},
		{"bad member", "[[groups]]\nname = \"a\"\nmembers = [\"pi.1\"]\n", "member \"pi.1\""},
		{"bad pattern", "[[groups]]\nname = \"a\"\nmembers = [\"pi-[\"]\n", "not a valid pattern"},
		{"pattern with a character no id has", "[[groups]]\nname = \"a\"\nmembers = [\"pi.*\"]\n", "can match no agent id"},
		{"member twice", "[[groups]]\nname = \"a\"\nmembers = [\"x\", \"x\"]\n", "member \"x\" listed twice"},
		{"empty tool", "[[groups]]\nname = \"a\"\nmembers = [\"x\"]\ntools = [\"\"]\n", "tools: \"\" is empty or listed twice"},
		{"unknown key", "[[groups]]\nname = \"a\"\nmembers = [\"x\"]\nmember = \"y\"\n", "member"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := loadConfig(t, t.TempDir(), tc.body, tc.want)
			if ok && (len(c.Groups) == 0 || len(actorGroups(c.Groups)) != len(c.Groups)) {
				t.Fatalf("groups %+v", c.Groups)
			}
		})
	}
}

func TestGroupsConfigAllErrors(t *testing.T) {
	errs := validateGroups([]GroupConf{{Name: ""}, {Name: "ok", Members: []string{"a", "b?"}}, {Name: "x", Members: []string{"bad id"}}})
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	got := strings.Join(msgs, "\n")
	for _, want := range []string{"groups[0]: name is required", "groups[0]: members is empty", "groups[2] (x): member \"bad id\""} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %q lack %q", got, want)
		}
	}
	if len(errs) != 3 {
		t.Errorf("%d errors, want 3: %s", len(errs), got)
	}
}
