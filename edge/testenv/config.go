package testenv

import (
	"os"
	"strings"
	"testing"
)

// LoadFile writes body to path and reads it back with load: the step of
// every configuration test. With want set, it expects an error mentioning
// want and returns false; with want empty, any error fails the test.
func LoadFile[C any](t testing.TB, path, body, want string, load func(path string) (C, error)) (C, bool) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := load(path)
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("load %s = %v, want an error mentioning %q", path, err, want)
		}
		return c, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}
