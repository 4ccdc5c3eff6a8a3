package orchestrator

import (
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// TestMergeApprovals: the cluster's listing is the newest limit of every
// node's approvals, newest first, ties by id, as one store lists them.
func TestMergeApprovals(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	apr := func(id, node string, sec int) persistence.Approval {
		return persistence.Approval{ID: id, Node: node, Requested: t0.Add(time.Duration(sec) * time.Second)}
	}
	ids := func(list []persistence.Approval) string {
		s := ""
		for _, a := range list {
			s += a.ID + "@" + a.Node + " "
		}
		return s
	}
	for _, tc := range []struct {
		name        string
		own, others []persistence.Approval
		limit       int
		want        string
	}{
		{"a node alone", []persistence.Approval{apr("a2", "n1", 2), apr("a1", "n1", 1)}, nil, 5, "a2@n1 a1@n1 "},
		{"interleaved", []persistence.Approval{apr("a3", "n1", 3), apr("a1", "n1", 1)},
			[]persistence.Approval{apr("b4", "n2", 4), apr("b2", "n2", 2), apr("c0", "n3", 0)}, 10, "b4@n2 a3@n1 b2@n2 a1@n1 c0@n3 "},
		{"cut to the limit", []persistence.Approval{apr("a3", "n1", 3), apr("a1", "n1", 1)},
			[]persistence.Approval{apr("b4", "n2", 4), apr("b2", "n2", 2)}, 3, "b4@n2 a3@n1 b2@n2 "},
		{"ties by id", []persistence.Approval{apr("b", "n1", 1)}, []persistence.Approval{apr("a", "n2", 1), apr("c", "n3", 1)}, 3, "a@n2 b@n1 c@n3 "},
		{"only others", nil, []persistence.Approval{apr("b", "n2", 1)}, 1, "b@n2 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(mergeApprovals(tc.own, tc.others, tc.limit)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
