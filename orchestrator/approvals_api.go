package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/orchestrator/internal/approvals"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// maxDecisionBody bounds a decision body.
const maxDecisionBody = 8 << 10

// maxApprovalsLimit bounds GET /v1/approvals?limit=.
const maxApprovalsLimit = sqlite.DefaultApprovalsKept * 2

// ApprovalsPage is what GET /v1/approvals answers: in a cluster, every
// member's approvals (each naming its node), newest first.
type ApprovalsPage struct {
	Approvals []persistence.Approval `json:"approvals"`
	// Partial is set when the list may lack approvals: a member did not
	// answer in time (named in Unanswered) or left its oldest out.
	Partial    bool     `json:"partial,omitempty"`
	Unanswered []string `json:"unanswered,omitempty"`
}

// DecisionRequest is the body of POST /v1/approvals/{id}/approve|deny.
type DecisionRequest struct {
	// By names who decides; required (the API has one token, so the name
	// is the caller's word: see docs/API.md).
	By string `json:"by"`
	// Note is shown to the model with a denial and kept in the audit.
	Note string `json:"note,omitempty"`
}

// checkBy refuses a name of who decided or changed something (an
// approval's by, a job change's ?by=) that is over 64 bytes, not UTF-8, or
// holds a control or format character (a line break, an escape, a
// right-to-left override that shows "alice" for "ecila"): it goes into
// audit events, which an auditor reads as written, and log lines.
func checkBy(by string) error {
	if len(by) > 64 || !utf8.ValidString(by) || strings.IndexFunc(by, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	}) >= 0 {
		return &fieldError{param: "by", msg: "by: at most 64 bytes on one line, printable (no control or format characters)"}
	}
	return nil
}

// decodeDecision parses a decision body: one object, by required, unknown
// fields refused.
func decodeDecision(body []byte) (DecisionRequest, error) {
	var d DecisionRequest
	if err := decodeStrict(body, &d, `{"by": "NAME", "note": optional}`); err != nil {
		return d, err
	}
	d.By, d.Note = strings.TrimSpace(d.By), strings.TrimSpace(d.Note)
	switch {
	case d.By == "":
		return d, &fieldError{param: "by", msg: "by: required: who decides"}
	case checkBy(d.By) != nil:
		return d, checkBy(d.By)
	case approvals.NodeDecides(d.By):
		return d, &fieldError{param: "by", msg: fmt.Sprintf("by: %q is how the node records a decision it made itself (%s, %s, %s); give the name of who decides",
			d.By, approvals.ByTimeout, approvals.ByRestart, approvals.ByCanceled)}
	case len(d.Note) > 1024:
		return d, &fieldError{param: "note", msg: "note: at most 1024 bytes"}
	}
	return d, nil
}

// handleApprovals lists approvals: ?state=pending (default), approved,
// denied, timed_out, canceled or all; &limit=N (default 100).
func (n *Node) handleApprovals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	switch state {
	case "":
		state = persistence.ApprovalPending
	case "all":
		state = ""
	case persistence.ApprovalPending, persistence.ApprovalApproved, persistence.ApprovalDenied, persistence.ApprovalTimedOut,
		persistence.ApprovalCanceled:
	default:
		writeAPIErrorParam(w, http.StatusBadRequest, "state", "state: want pending, approved, denied, timed_out, canceled or all")
		return
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > maxApprovalsLimit {
			badLimit(w, maxApprovalsLimit)
			return
		}
	}
	list, err := n.gate.List(r.Context(), state, limit)
	if err != nil {
		approvalError(w, r, err)
		return
	}
	for i := range list {
		list[i].Node = n.cfg.NodeID
	}
	others, unanswered, truncated := n.listOthers(r.Context(), state, limit)
	list = mergeApprovals(list, others, limit)
	if list == nil {
		list = []persistence.Approval{}
	}
	writeJSON(w, http.StatusOK, ApprovalsPage{Approvals: list, Partial: truncated || len(unanswered) > 0, Unanswered: unanswered})
}

// mergeApprovals is the newest limit of own and others (each newest
// first), newest first, as one store lists them.
func mergeApprovals(own, others []persistence.Approval, limit int) []persistence.Approval {
	if len(others) == 0 {
		return own
	}
	all := append(own, others...)
	slices.SortStableFunc(all, func(a, b persistence.Approval) int {
		if c := b.Requested.Compare(a.Requested); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return all[:min(len(all), limit)]
}

func (n *Node) handleApproval(w http.ResponseWriter, r *http.Request) {
	a, err := n.gate.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		if res, ok := n.approvalElsewhere(r.Context(), err, remoteOp{Op: remoteApproval, ID: r.PathValue("id")}); ok {
			writeRemote(w, res)
			return
		}
		approvalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (n *Node) handleDecide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, ok := readBody(w, r, maxDecisionBody)
		if !ok {
			return
		}
		d, err := decodeDecision(body)
		if err != nil {
			refuseRequest(w, err)
			return
		}
		a, err := n.gate.Decide(r.Context(), r.PathValue("id"), approve, d.By, d.Note)
		if err != nil {
			op := remoteOp{Op: remoteDeny, ID: r.PathValue("id"), By: d.By, Note: d.Note}
			if approve {
				op.Op = remoteApprove
			}
			if res, ok := n.approvalElsewhere(r.Context(), err, op); ok {
				writeRemote(w, res)
				return
			}
			approvalError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, a)
	}
}

// approvalElsewhere asks the other nodes of a cluster about an approval
// this node does not have (err is its store's ErrNoApproval): the node
// whose call waits for it reads or decides it.
func (n *Node) approvalElsewhere(ctx context.Context, err error, op remoteOp) (remoteResult, bool) {
	if !errors.Is(err, sqlite.ErrNoApproval) {
		return remoteResult{}, false
	}
	return n.askOthers(ctx, op)
}

// approvalError answers an approval error of request r with its status:
// 503 when the store cannot take it (storeUnavailable), the message
// bounded by echoed.
func approvalError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case storeUnavailable(w, err):
	case errors.Is(err, sqlite.ErrNoApproval):
		echoError(w, r, http.StatusNotFound, err)
	case errors.Is(err, sqlite.ErrDecided):
		echoError(w, r, http.StatusConflict, err)
	case errors.Is(err, approvals.ErrNodeDecider), errors.Is(err, approvals.ErrNoDecider):
		echoError(w, r, http.StatusBadRequest, err)
	default:
		echoError(w, r, http.StatusInternalServerError, err)
	}
}
