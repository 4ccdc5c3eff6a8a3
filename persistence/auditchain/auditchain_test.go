package auditchain

import (
	"errors"
	"strings"
	"testing"
)

func mustHash(t testing.TB, prev Digest, table string, vals ...any) Digest {
	t.Helper()
	d, err := Hash(prev, table, vals)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestHashDistinguishes(t *testing.T) {
	g := Genesis("c1")
	if g == Genesis("c2") {
		t.Fatal("genesis of two chains is equal")
	}
	base := mustHash(t, g, "t", "a", int64(1), nil)
	others := map[string]Digest{
		"other prev":       mustHash(t, Genesis("c2"), "t", "a", int64(1), nil),
		"other table":      mustHash(t, g, "u", "a", int64(1), nil),
		"int vs text":      mustHash(t, g, "t", "a", "1", nil),
		"null vs empty":    mustHash(t, g, "t", "a", int64(1), ""),
		"text vs blob":     mustHash(t, g, "t", []byte("a"), int64(1), nil),
		"shifted boundary": mustHash(t, g, "t", "a1", nil),
		"extra column":     mustHash(t, g, "t", "a", int64(1), nil, nil),
		"float":            mustHash(t, g, "t", "a", float64(1), nil),
	}
	for name, d := range others {
		if d == base {
			t.Errorf("%s: same hash", name)
		}
	}
	if again := mustHash(t, g, "t", "a", 1, nil); again != base {
		t.Error("int and int64 of the same value hash differently")
	}
	if _, err := Hash(g, "t", []any{struct{}{}}); err == nil || !strings.Contains(err.Error(), "column 0") {
		t.Fatalf("unsupported type: %v", err)
	}
}

func TestParseDigest(t *testing.T) {
	d := Genesis("x")
	if got, err := ParseDigest(d.String()); err != nil || got != d {
		t.Fatalf("round trip: %v %v", got, err)
	}
	upper := strings.ToUpper(d.String())
	for _, bad := range []string{"", "abc", strings.Repeat("g", 64), strings.Repeat("a", 66),
		upper, d.String()[:63] + "F", "A" + d.String()[1:], strings.Repeat(" ", 64)} {
		if _, err := ParseDigest(bad); !errors.Is(err, ErrBadHash) {
			t.Errorf("ParseDigest(%q): %v, want ErrBadHash", bad, err)
		}
	}
}

// chain builds n valid records of table "t" from genesis of "c".
func chain(t *testing.T, n int) []Record {
	prev := Genesis("c")
	var out []Record
	for i := 1; i <= n; i++ {
		vals := []any{"r" + string(rune('a'+i)), int64(i * 10), int64(i)}
		h := mustHash(t, prev, "t", vals...)
		out = append(out, Record{Table: "t", RecordID: vals[0].(string), Seq: int64(i), Hash: h.String(), Values: vals})
		prev = h
	}
	return out
}

func TestVerifier(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(rs []Record) []Record
		wantKind string // empty: verifies
		wantSeq  int64
	}{
		{"intact", func(rs []Record) []Record { return rs }, "", 0},
		{"edited value", func(rs []Record) []Record { rs[2].Values[1] = int64(999); return rs }, BreakEdited, 3},
		{"edited hash", func(rs []Record) []Record {
			rs[2].Values[1] = int64(999)
			rs[2].Hash = mustHash(t, mustParse(t, rs[1].Hash), "t", rs[2].Values...).String()
			return rs
		}, BreakEdited, 4},
		{"deleted", func(rs []Record) []Record { return append(rs[:1], rs[2:]...) }, BreakMissing, 3},
		{"deleted first", func(rs []Record) []Record { return rs[1:] }, BreakMissing, 2},
		{"duplicated", func(rs []Record) []Record { return append(rs[:2], rs[1:]...) }, BreakOrder, 2},
		{"swapped", func(rs []Record) []Record { rs[1], rs[2] = rs[2], rs[1]; return rs }, BreakMissing, 3},
		{"swapped seqs", func(rs []Record) []Record {
			rs[1].Seq, rs[2].Seq = rs[2].Seq, rs[1].Seq
			rs[1], rs[2] = rs[2], rs[1]
			return rs
		}, BreakEdited, 2},
		{"bad hash", func(rs []Record) []Record { rs[0].Hash = "zz"; return rs }, BreakHash, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := tt.edit(chain(t, 5))
			v := NewVerifier(0, Genesis("c"))
			var err error
			for _, r := range rs {
				if err = v.Add(r); err != nil {
					break
				}
			}
			if tt.wantKind == "" {
				if err != nil {
					t.Fatal(err)
				}
				if seq, _ := v.Head(); seq != 5 || v.Count() != 5 {
					t.Fatalf("head %d, count %d", seq, v.Count())
				}
				return
			}
			var be *BreakError
			if !errors.As(err, &be) || !errors.Is(err, ErrBroken) {
				t.Fatalf("got %v, want a BreakError", err)
			}
			if be.Kind != tt.wantKind || be.Seq != tt.wantSeq {
				t.Fatalf("got %s at %d (%v), want %s at %d", be.Kind, be.Seq, err, tt.wantKind, tt.wantSeq)
			}
		})
	}
}

func TestVerifierFromCheckpoint(t *testing.T) {
	rs := chain(t, 6)
	v := NewVerifier(3, mustParse(t, rs[2].Hash))
	for _, r := range rs[3:] {
		if err := v.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if v.Count() != 3 {
		t.Fatalf("count %d", v.Count())
	}
	// A checkpoint with the wrong hash breaks at the first record after it.
	v = NewVerifier(3, mustParse(t, rs[1].Hash))
	if err := v.Add(rs[3]); !errors.Is(err, ErrBroken) {
		t.Fatalf("wrong checkpoint hash: %v", err)
	}
}

func mustParse(t testing.TB, s string) Digest {
	d, err := ParseDigest(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// FuzzHashInjective checks that two different value lists never share a
// hash through the encoding (a shared hash here would be an encoding
// ambiguity, not a SHA-256 collision).
func FuzzHashInjective(f *testing.F) {
	f.Add("ab", "c", "a", "bc", int64(1), int64(1))
	f.Add("", "", "", "", int64(0), int64(-1))
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string, n1, n2 int64) {
		x := []any{a1, a2, n1}
		y := []any{b1, b2, n2}
		if a1 == b1 && a2 == b2 && n1 == n2 {
			return
		}
		hx, _ := Hash(Digest{}, "t", x)
		hy, _ := Hash(Digest{}, "t", y)
		if hx == hy {
			t.Fatalf("%q and %q hash alike", x, y)
		}
		// Mixed types at the same position differ too.
		hz, _ := Hash(Digest{}, "t", []any{a1, a2, []byte(nil)})
		if hz == hx {
			t.Fatalf("int and blob hash alike")
		}
	})
}
