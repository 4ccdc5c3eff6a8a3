package actors

import "testing"

func TestRequestTag(t *testing.T) {
	for _, tc := range []struct {
		prefix, tag string
	}{{"tool", ""}, {"tool", "node1"}, {"prompt", "node-2_b"}} {
		id := RequestID(tc.prefix, tc.tag, 1700000000000000000, 42)
		tag, ok := RequestTagOf(id)
		if ok != (tc.tag != "") || tag != tc.tag {
			t.Errorf("RequestTagOf(%q) = %q, %v; want %q", id, tag, ok, tc.tag)
		}
	}
	for _, id := range []string{"", "tool-", "tool-.1-2", "tools-pi1-1-2", "req-1", "tool-123-4", "x-node1.1-2"} {
		if tag, ok := RequestTagOf(id); ok {
			t.Errorf("RequestTagOf(%q) = %q, want none", id, tag)
		}
	}
}

func FuzzRequestTagOf(f *testing.F) {
	f.Add("tool-node1.1-2")
	f.Add("prompt-a.b.c")
	f.Add("tools-x")
	f.Fuzz(func(t *testing.T, id string) {
		tag, ok := RequestTagOf(id)
		if ok && (tag == "" || RequestID("tool", tag, 1, 1) == "") {
			t.Fatalf("RequestTagOf(%q) = %q", id, tag)
		}
		if ok {
			if again, ok2 := RequestTagOf(RequestID("tool", tag, 5, 6)); !ok2 || again != tag {
				t.Fatalf("tag %q does not round-trip", tag)
			}
		}
	})
}
