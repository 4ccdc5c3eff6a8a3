package cold

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

func TestVerifyJoin(t *testing.T) {
	// hashes of chain_seq 1..10 as both tiers would hold them.
	hash := func(seq int64) string { return auditchain.Genesis(string(rune('a' + seq))).String() }
	lookup := func(lo, hi int64, forged map[int64]string) func(context.Context, int64) (string, bool, error) {
		return func(_ context.Context, seq int64) (string, bool, error) {
			if seq < lo || seq > hi {
				return "", false, nil
			}
			if h, ok := forged[seq]; ok {
				return h, true, nil
			}
			return hash(seq), true, nil
		}
	}
	tests := []struct {
		name     string
		warm     auditchain.Report // StartSeq, StartHash, HeadSeq
		cold     ChainState
		warmForg map[int64]string
		coldForg map[int64]string
		broken   bool
		first    string // in the error: the first record that differs
	}{
		{"overlap", auditchain.Report{StartSeq: 4, StartHash: hash(4), HeadSeq: 10}, ChainState{FirstSeq: 1, ShippedSeq: 8, HeadHash: hash(8)}, nil, nil, false, ""},
		{"cold ends where warm starts", auditchain.Report{StartSeq: 8, StartHash: hash(8), HeadSeq: 10}, ChainState{FirstSeq: 1, ShippedSeq: 8, HeadHash: hash(8)}, nil, nil, false, ""},
		{"nothing pruned", auditchain.Report{StartSeq: 0, StartHash: auditchain.Genesis("x").String(), HeadSeq: 10}, ChainState{FirstSeq: 1, ShippedSeq: 10, HeadHash: hash(10)}, nil, nil, false, ""},
		{"gap between tiers", auditchain.Report{StartSeq: 9, StartHash: hash(9), HeadSeq: 10}, ChainState{FirstSeq: 1, ShippedSeq: 7, HeadHash: hash(7)}, nil, nil, true, ""},
		{"forged checkpoint", auditchain.Report{StartSeq: 4, StartHash: hash(9), HeadSeq: 10}, ChainState{FirstSeq: 1, ShippedSeq: 8, HeadHash: hash(8)}, nil, nil, true, ""},
		{"warm record differs from cold", auditchain.Report{StartSeq: 4, StartHash: hash(4), HeadSeq: 10}, ChainState{FirstSeq: 1, ShippedSeq: 8, HeadHash: hash(8)}, map[int64]string{8: hash(3)}, nil, true, ""},
		{"cold beyond warm head", auditchain.Report{StartSeq: 4, StartHash: hash(4), HeadSeq: 6}, ChainState{FirstSeq: 1, ShippedSeq: 8, HeadHash: hash(8)}, nil, nil, true, ""},
		// Cold records rewritten from chain_seq 5 on, every hash recomputed,
		// the chains row left as shipped: the cold chain verifies by itself.
		{"cold records rewritten under the chains row", auditchain.Report{StartSeq: 0, StartHash: auditchain.Genesis("x").String(), HeadSeq: 10},
			ChainState{FirstSeq: 1, ShippedSeq: 8, HeadHash: hash(8)}, nil, map[int64]string{5: hash(15), 6: hash(16), 7: hash(17), 8: hash(18)}, true, "first record that differs is chain_seq 5"},
	}
	for _, tt := range tests {
		err := VerifyJoin(context.Background(), &tt.warm, tt.cold,
			lookup(tt.warm.StartSeq+1, tt.warm.HeadSeq, tt.warmForg), lookup(tt.cold.FirstSeq, tt.cold.ShippedSeq, tt.coldForg))
		if tt.broken != (err != nil) {
			t.Errorf("%s: got %v, want broken=%v", tt.name, err, tt.broken)
		}
		if err != nil && !strings.Contains(err.Error(), tt.first) {
			t.Errorf("%s: %v does not say %q", tt.name, err, tt.first)
		}
		if err != nil && !errors.Is(err, ErrTiersDisagree) {
			t.Errorf("%s: %v does not wrap ErrTiersDisagree", tt.name, err)
		}
	}
}

func TestVerifyPrunedShipped(t *testing.T) {
	const shipped = "shipped"
	passes := func(reason string, bounds ...int64) []PrunedRange {
		var out []PrunedRange
		for i := 0; i+1 < len(bounds); i += 2 {
			out = append(out, PrunedRange{First: bounds[i], Last: bounds[i+1], TS: "t", Reason: reason})
		}
		return out
	}
	tests := []struct {
		name   string
		first  int64 // the cold copy's first chain_seq
		pruned []PrunedRange
		want   string // in the error; empty: no break
	}{
		{"cold holds all it was shipped", 1, passes(shipped, 1, 10, 11, 20), ""},
		{"nothing pruned", 5, nil, ""},
		{"pruned by age before the cold tier was configured", 11, passes("older than max age", 1, 10), ""},
		{"cold lost what it held", 21, passes(shipped, 1, 10, 11, 20), "chain_seq 1..20 were deleted from warm as shipped (2 retention passes"},
		{"cold lost part of a pass", 6, passes(shipped, 1, 10, 11, 20), "chain_seq 1..5 were deleted"},
		{"age first, then shipped and lost", 21, append(passes("older than max age", 1, 10), passes(shipped, 11, 20)...), "chain_seq 11..20 were deleted"},
	}
	for _, tt := range tests {
		err := VerifyPrunedShipped(ChainState{FirstSeq: tt.first}, tt.pruned, shipped)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrTiersDisagree)):
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}
