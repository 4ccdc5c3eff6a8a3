package actors

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestCallArgumentsAreBounded: a call whose arguments pass MaxArgsBytes
// is refused as invalid_params without being sent, and its audit row
// keeps their size and hash, not the bytes; one just under runs.
func TestCallArgumentsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		runs int32
	}{
		{"over the bound", MaxArgsBytes + 1, 0},
		{"under the bound", MaxArgsBytes - 64, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Repeat("x", tc.size-len(`{"text":""}`))
			args, _ := json.Marshal(map[string]string{"text": text})
			if len(args) != tc.size {
				t.Fatalf("arguments of %d bytes, want %d", len(args), tc.size)
			}
			h := newHarness(t, transcript(callTurn("c1", "pi-1__echo", string(args)), `{"content":"done"}`), nil)
			var runs atomic.Int32
			h.edge.onTool = countingEcho(h, &runs)
			if ans := h.chat(t, "go"); ans.Err != nil {
				t.Fatal(ans.Err)
			}
			if runs.Load() != tc.runs {
				t.Fatalf("ran %d times, want %d", runs.Load(), tc.runs)
			}
			recs := h.audit.All()
			if len(recs) != 1 {
				t.Fatalf("audit rows %d", len(recs))
			}
			if tc.runs == 1 {
				if string(recs[0].Params) != string(args) {
					t.Fatalf("the row does not keep the arguments (%d bytes)", len(recs[0].Params))
				}
				return
			}
			var kept struct {
				Bytes  int    `json:"bytes"`
				SHA256 string `json:"sha256"`
			}
			if recs[0].ErrorType != string(wire.ErrInvalidParams) || json.Unmarshal(recs[0].Params, &kept) != nil || kept.Bytes != len(args) || kept.SHA256 != fmt.Sprintf("%x", sha256.Sum256(args)) {
				t.Fatalf("row: %s %s", recs[0].ErrorType, recs[0].Params)
			}
		})
	}
}

// TestCallsPerTurnAreBounded: of one turn's calls, MaxCallsPerTurn run;
// the rest are answered too_many_calls, each audited, none sent.
func TestCallsPerTurnAreBounded(t *testing.T) {
	const n = MaxCallsPerTurn + 6
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"id":"c%d","name":"pi-1__echo","arguments":{"text":"t%d"}}`, i, i)
	}
	turn := `{"content":"","tool_calls":[` + strings.Join(calls, ",") + `]}`
	h := newHarness(t, transcript(turn, `{"content":"done"}`), nil)
	var runs atomic.Int32
	h.edge.onTool = countingEcho(h, &runs)
	if ans := h.chat(t, "go"); ans.Err != nil {
		t.Fatal(ans.Err)
	}
	if runs.Load() != MaxCallsPerTurn {
		t.Fatalf("ran %d calls, want %d", runs.Load(), MaxCallsPerTurn)
	}
	recs := h.audit.All()
	refused := 0
	for _, r := range recs {
		if r.ErrorType == string(ErrTooManyCalls) {
			refused++
		}
	}
	if len(recs) != n || refused != n-MaxCallsPerTurn {
		t.Fatalf("%d rows, %d refused; want %d and %d", len(recs), refused, n, n-MaxCallsPerTurn)
	}
}
