package auditchain

import (
	"errors"
	"strings"
	"testing"
)

func TestKeyMAC(t *testing.T) {
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseKey(k.String() + "\n")
	if err != nil || back != k {
		t.Fatalf("round trip: %v", err)
	}
	other, _ := NewKey()
	h := Genesis("c")
	m := k.MAC(AnchorSeal, "c", 7, h)
	if !k.CheckMAC(m.String(), AnchorSeal, "c", 7, h) {
		t.Fatal("own MAC does not check")
	}
	for name, ok := range map[string]bool{
		"other key":   other.CheckMAC(m.String(), AnchorSeal, "c", 7, h),
		"other kind":  k.CheckMAC(m.String(), AnchorCheckpoint, "c", 7, h),
		"other chain": k.CheckMAC(m.String(), AnchorSeal, "d", 7, h),
		"other seq":   k.CheckMAC(m.String(), AnchorSeal, "c", 8, h),
		"other hash":  k.CheckMAC(m.String(), AnchorSeal, "c", 7, Genesis("d")),
		"malformed":   k.CheckMAC("zz", AnchorSeal, "c", 7, h),
	} {
		if ok {
			t.Errorf("%s: MAC checks", name)
		}
	}
	if k.ID() == other.ID() || len(k.ID()) != 16 || strings.Contains(k.String(), k.ID()) {
		t.Fatalf("key ids %s %s", k.ID(), other.ID())
	}
	for _, bad := range []string{"", "abc", strings.Repeat("g", 64)} {
		if _, err := ParseKey(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseKey(%q): %v", bad, err)
		}
	}
}

func TestPrintable(t *testing.T) {
	if got := Printable("tool_calls"); got != "tool_calls" {
		t.Fatalf("plain text changed: %q", got)
	}
	for _, in := range []string{"a\nb", "\x1b[31mred", strings.Repeat("x", 10000), "bad \xff utf8"} {
		got := Printable(in)
		if len(got) > 4*MaxPrintable+32 || strings.ContainsAny(got, "\n\x1b\xff") {
			t.Errorf("Printable(%.20q) = %.100q", in, got)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("a\x00b\n\x1b")
	f.Fuzz(func(t *testing.T, s string) {
		got := Printable(s)
		if len(got) > 10*MaxPrintable+32 {
			t.Fatalf("%d bytes", len(got))
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character in %q", got)
			}
		}
	})
}
