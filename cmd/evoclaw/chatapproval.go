package main

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/persistence"
)

// approvalArgsTimeout bounds the read of a pending approval's arguments.
const approvalArgsTimeout = 5 * time.Second

// onApprovalWait shows a call that waits for a person's approval and then
// its arguments in full, as the node keeps them with the approval:
// the call's progress line carries at most 200 bytes of them, and a model
// can put what a person would deny after those. Whoever decides from the
// chat reads what they decide on. A node that cannot be asked leaves a
// line that says where to read them.
func (s *chatSession) onApprovalWait(ctx context.Context, p actors.Progress) {
	s.view.onProgress(p)
	ctx, cancel := context.WithTimeout(ctx, approvalArgsTimeout)
	defer cancel()
	var a persistence.Approval
	if err := s.client.getJSON(ctx, http.MethodGet, "/v1/approvals/"+url.PathEscape(p.ApprovalID), nil, &a); err != nil {
		s.view.urgent("    " + termLine("(its arguments could not be read: "+err.Error()+"; evoclaw approvals list shows them)", maxProgressLine))
		return
	}
	s.view.urgent("    " + termLine("arguments: "+a.Params, approvalParamsFull))
}
