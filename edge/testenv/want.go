package testenv

import (
	"os"
	"strings"
	"testing"
)

// WantErr checks err against want, a substring of the error a table case
// expects: with want empty, any error fails the test; with want set, err
// must mention it. It reports whether an error was wanted, so that the
// case ends there:
//
//	if testenv.WantErr(t, err, tt.err) {
//		return
//	}
func WantErr(t testing.TB, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want an error mentioning %q", err, want)
	}
	return true
}

// LoadFile writes body to path and reads it back with load: the step of
// every configuration test. With want set, it expects an error mentioning
// want and returns false; with want empty, any error fails the test.
func LoadFile[C any](t testing.TB, path, body, want string, load func(path string) (C, error)) (C, bool) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := load(path)
	return c, !WantErr(t, err, want)
}
