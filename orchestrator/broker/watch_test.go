package broker

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSettlerActsOnSettledChanges: the watcher reloads a file only once two
// polls in a row see it the same, so a file caught empty or half written
// while it is rewritten in place is never read. Each step sets the file's
// state (or leaves it), polls, and says whether the poll must reload.
func TestSettlerActsOnSettledChanges(t *testing.T) {
	const (
		v1    = "alex agent $2a$04$first 2026-01-01T00:00:00Z\n"
		v2    = "alex agent $2a$04$first 2026-01-01T00:00:00Z\nbob agent $2a$04$second 2026-01-01T00:00:00Z\n"
		half  = "alex agent $2a$04$first 2026-01-01T00:00:00Z\nbob ag"
		empty = ""
		keep  = "<keep>"   // leave the file as it is
		gone  = "<remove>" // remove the file
		moved = "<rename>" // replace it by renaming another file over it, with v2
	)
	type step struct {
		state  string
		reload bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"no change", []step{{keep, false}, {keep, false}}},
		{"rewritten in place, caught empty", []step{{empty, false}, {v2, false}, {keep, true}, {keep, false}}},
		{"rewritten in place, caught half written", []step{{half, false}, {v2, false}, {keep, true}}},
		{"renamed over", []step{{moved, false}, {keep, true}, {keep, false}}},
		{"removed", []step{{gone, false}, {keep, true}, {keep, false}}},
		{"emptied on purpose, and left so", []step{{empty, false}, {keep, true}}},
		{"changed twice before settling", []step{{v2, false}, {half, false}, {v1 + v1, false}, {keep, true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "mqtt-users")
			write := func(content string) {
				t.Helper()
				if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write(v1)
			files := []string{path}
			s := newSettler(stamps(files))
			for i, st := range tc.steps {
				switch st.state {
				case keep:
				case gone:
					if err := os.Remove(path); err != nil {
						t.Fatal(err)
					}
				case moved:
					tmp := filepath.Join(dir, "new")
					if err := os.WriteFile(tmp, []byte(v2), 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(tmp, path); err != nil {
						t.Fatal(err)
					}
				default:
					write(st.state)
				}
				if got := s.observe(stamps(files)); got != st.reload {
					t.Fatalf("step %d (%q): reload %v, want %v", i, st.state, got, st.reload)
				}
			}
		})
	}
}

// TestSettlerAfterSignal: a reload on a signal counts as acting on the
// files as they are then, so the next polls do not reload them again.
func TestSettlerAfterSignal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mqtt-users")
	if err := os.WriteFile(path, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []string{path}
	s := newSettler(stamps(files))
	if err := os.WriteFile(path, []byte("ab"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.applied(stamps(files))
	for i := range 2 {
		if s.observe(stamps(files)) {
			t.Fatalf("poll %d after the signal's reload reloaded again", i)
		}
	}
}
