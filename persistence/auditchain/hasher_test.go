package auditchain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// refHash is the record hash as docs/AUDIT.md specifies it, written out
// plainly: the domain, the previous hash, the table, the count of covered
// values, then each value as a type tag and its content.
func refHash(t *testing.T, prev Digest, table string, vals []any) Digest {
	t.Helper()
	if tb, ok := TableByName(table); ok {
		vals = tb.HashedValues(vals)
	}
	str := func(b []byte, tag byte, s string) []byte {
		b = append(b, tag)
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	b := append([]byte("evoclaw audit chain v1\x00"), prev[:]...)
	b = str(b, 's', table)
	b = binary.AppendUvarint(b, uint64(len(vals)))
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			b = append(b, 'n')
		case int64:
			b = binary.BigEndian.AppendUint64(append(b, 'i'), uint64(x))
		case float64:
			b = binary.BigEndian.AppendUint64(append(b, 'f'), math.Float64bits(x))
		case string:
			b = str(b, 's', x)
		case []byte:
			b = str(b, 'b', string(x))
		default:
			t.Fatalf("refHash: type %T", v)
		}
	}
	return sha256.Sum256(b)
}

// refMAC is an anchor's HMAC as docs/AUDIT.md specifies it.
func refMAC(k Key, kind, chainID string, seq int64, h Digest) Digest {
	m := hmac.New(sha256.New, k[:])
	b := append([]byte("evoclaw audit anchor v1\x00"+kind+"\x00"), binary.AppendUvarint(nil, uint64(len(chainID)))...)
	b = append(b, chainID...)
	b = binary.BigEndian.AppendUint64(b, uint64(seq))
	m.Write(append(b, h[:]...))
	var d Digest
	m.Sum(d[:0])
	return d
}

// One Hasher, reused across records of every table, values of every
// kind (a value larger than its buffer among them) and MACs under two
// keys, gives what a fresh computation gives every time.
func TestHasherReusedMatchesTheSpecification(t *testing.T) {
	tool := func(agentElapsed any) []any {
		return []any{"rec-1", "2026-11-24T22:00:00.000000000Z", int64(1764021600000), "orch-1", "orchestrator",
			"conv-1", "req-1", "call_1", "edge-1", "todoread", "{}", "success", nil, nil, nil,
			int64(3), "[]", int64(2), agentElapsed, int64(41)}
	}
	records := []struct {
		table string
		vals  []any
	}{
		{"tool_calls", tool(nil)},      // the optional column NULL: not covered
		{"tool_calls", tool(int64(2))}, // covered
		{"tool_calls", tool(nil)[:5]},  // not a full row: every value covered
		{"messages", []any{"rec-2", "conv-1", int64(1), "ts", int64(5), "user", strings.Repeat("x", 70<<10), int64(42)}},
		{"llm_calls", []any{"rec-3", "ts", int64(5), "n", nil, "p", "m", int64(1), int64(2), int64(3), "success", nil, nil, int64(0), int64(43)}},
		{"events", []any{"rec-4", "ts", int64(5), "n", nil, "node_start", []byte(`{}`), int64(44)}},
		{"other", []any{1.5, "", nil}},
	}
	k1, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k2, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	var x Hasher
	prev := Genesis("chain")
	for round := range 3 {
		for i, r := range records {
			got, err := x.Hash(prev, r.table, r.vals)
			if err != nil {
				t.Fatalf("round %d record %d: %v", round, i, err)
			}
			if want := refHash(t, prev, r.table, r.vals); got != want {
				t.Fatalf("round %d record %d (%s): Hasher.Hash %s, specification %s", round, i, r.table, got, want)
			}
			if one, _ := Hash(prev, r.table, r.vals); one != got {
				t.Fatalf("round %d record %d: Hash %s, Hasher.Hash %s", round, i, one, got)
			}
			for _, k := range []Key{k1, k2, k1} {
				if got, want := x.MAC(k, AnchorSeal, "chain", int64(i), got), refMAC(k, AnchorSeal, "chain", int64(i), got); got != want {
					t.Fatalf("round %d record %d: Hasher.MAC %s, specification %s", round, i, got, want)
				}
				if got, want := k.MAC(AnchorCheckpoint, "c", -1, prev), refMAC(k, AnchorCheckpoint, "c", -1, prev); got != want {
					t.Fatalf("Key.MAC %s, specification %s", got, want)
				}
			}
			prev = got
		}
	}
	if _, err := x.Hash(prev, "t", []any{1, struct{}{}}); err == nil || !strings.Contains(err.Error(), "column 1") {
		t.Fatalf("unencodable value: %v, want an error naming column 1", err)
	}
}

// Hashing a record with a reused Hasher allocates nothing.
func TestHasherAllocatesNothingPerRecord(t *testing.T) {
	var x Hasher
	vals := []any{"rec-1", "conv-1", int64(1), "ts", int64(5), "user", `{"role":"user"}`, int64(7)}
	prev := Genesis("c")
	n := testing.AllocsPerRun(100, func() {
		if _, err := x.Hash(prev, "messages", vals); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per record, want 0", n)
	}
}
