//go:build !nocluster

package orchestrator

import (
	"strings"
	"testing"
)

// TestRemoteIDShape: only ids of the shape this build gives questions and
// approvals are asked about on the other nodes.
func TestRemoteIDShape(t *testing.T) {
	for _, tc := range []struct {
		op, id string
		want   bool
	}{
		{remoteApprove, "apr-0123456789abcdef", true},
		{remoteDeny, "apr-0123456789abcdef", true},
		{remoteApproval, "apr-0123456789abcdef", true},
		{remoteApprove, "apr-0123456789ABCDEF", false},
		{remoteApprove, "apr-0123456789abcde", false},
		{remoteApprove, "apr-0123456789abcdef0", false},
		{remoteApprove, "apr-0123456789abcdeg", false},
		{remoteApprove, "q-0123456789abcdef01234567", false},
		{remoteApprove, "apr-" + strings.Repeat("a", 200), false},
		{remoteApprove, "", false},
		{remoteAnswer, "q-0123456789abcdef01234567", true},
		{remoteAnswer, "q-0123456789ABCDEF01234567", false},
		{remoteAnswer, "q-0123456789abcdef0123456", false},
		{remoteAnswer, "q-0123456789abcdef0123456z", false},
		{remoteAnswer, "apr-0123456789abcdef", false},
		{remoteAnswer, "q-" + strings.Repeat("0", 200), false},
		{remoteList, "", false},
		{"bogus", "apr-0123456789abcdef", false},
	} {
		if got := remoteIDShape(remoteOp{Op: tc.op, ID: tc.id}); got != tc.want {
			t.Errorf("%s %q: %v, want %v", tc.op, tc.id, got, tc.want)
		}
	}
}
