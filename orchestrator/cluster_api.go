//go:build !nocluster

package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/evoclaw/evoclaw/orchestrator/internal/approvals"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// apiActorName is the actor, on every clustered node, that carries out
// what a person asked another node's API about this node's questions
// and approvals.
const apiActorName = "evoclaw-api"

// remoteAskTimeout bounds one node's answer to remoteAsk.
const remoteAskTimeout = 5 * time.Second

// maxRemoteOp bounds one remote API message: an answer or a decision
// with its note, and their framing.
const maxRemoteOp = 64 << 10

// What one node asks another about a question or an approval.
const (
	remoteAnswer   = "question_answer"
	remoteApproval = "approval_get"
	remoteApprove  = "approval_approve"
	remoteDeny     = "approval_deny"
	remoteList     = "approval_list"
)

// remoteOp is a question's answer or an approval's read or decision,
// taken by one node's API for another node's question or approval.
type remoteOp struct {
	Op     string `json:"op"`
	ID     string `json:"id"`
	Answer string `json:"answer,omitempty"`
	By     string `json:"by,omitempty"`
	Note   string `json:"note,omitempty"`
	// State and Limit ask remoteList for the node's approvals.
	State string `json:"state,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// remoteResult is the answer of the node asked: Found is false when it
// has no such question or approval either.
type remoteResult struct {
	Found    bool            `json:"found"`
	Node     string          `json:"node,omitempty"`
	Status   int             `json:"status,omitempty"`
	Error    string          `json:"error,omitempty"`
	Approval json.RawMessage `json:"approval,omitempty"`
	// Approvals answer remoteList, newest first; Truncated is set when
	// the oldest were left out to keep the answer under maxRemoteReply.
	Approvals []persistence.Approval `json:"approvals,omitempty"`
	Truncated bool                   `json:"truncated,omitempty"`
}

// maxRemoteReply bounds the approvals one node sends another for a
// listing (the gRPC transport refuses messages over 4 MiB).
const maxRemoteReply = 1 << 20

// maxRemoteOps bounds the other nodes' remoteOps carried out at once;
// one more is answered 503 at once.
const maxRemoteOps = 8

// startRemoteAPI spawns the actor answering the other nodes' remoteOps.
func (n *Node) startRemoteAPI() error {
	if _, err := n.system.Root.SpawnNamed(remoteAPIProps(n.cfg.NodeID, n.log, n.localOp), apiActorName); err != nil {
		return fmt.Errorf("cluster: spawn the API relay: %w", err)
	}
	return nil
}

// remoteAPIProps is the actor answering the other nodes' remoteOps with
// do, off its mailbox (a decision writes the audit store), at most
// maxRemoteOps at once; node names this node in the answers.
func remoteAPIProps(node string, log *slog.Logger, do func(context.Context, remoteOp) remoteResult) *actor.Props {
	slots := make(chan struct{}, maxRemoteOps)
	return actor.PropsFromFunc(func(c actor.Context) {
		m, ok := c.Message().(*wrapperspb.BytesValue)
		if !ok || c.Sender() == nil {
			return
		}
		var op remoteOp
		if len(m.Value) > maxRemoteOp || json.Unmarshal(m.Value, &op) != nil || (op.ID == "" && op.Op != remoteList) || len(op.ID) > 128 {
			log.Warn("dropping a malformed request of another node", "bytes", len(m.Value))
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			b, _ := json.Marshal(remoteResult{Found: true, Node: node, Status: http.StatusServiceUnavailable,
				Error: fmt.Sprintf("busy: %d requests of other nodes are being carried out", maxRemoteOps)})
			c.Respond(wrapperspb.Bytes(b))
			return
		}
		sender, root := c.Sender(), c.ActorSystem().Root
		go func() {
			defer func() { <-slots }()
			ctx, cancel := context.WithTimeout(context.Background(), remoteAskTimeout)
			defer cancel()
			res := do(ctx, op)
			res.Node = node
			b, _ := json.Marshal(res) // plain fields: cannot fail
			root.Send(sender, wrapperspb.Bytes(b))
		}()
	})
}

// localOp carries out op on this node's questions and approvals.
func (n *Node) localOp(ctx context.Context, op remoteOp) remoteResult {
	switch op.Op {
	case remoteAnswer:
		if n.questions == nil || n.questions.answer(op.ID, op.Answer) != nil {
			return remoteResult{}
		}
		return remoteResult{Found: true, Status: http.StatusNoContent}
	case remoteApproval, remoteApprove, remoteDeny:
		var err error
		var a any
		if op.Op == remoteApproval {
			a, err = n.gate.Get(ctx, op.ID)
		} else {
			a, err = n.gate.Decide(ctx, op.ID, op.Op == remoteApprove, op.By, op.Note)
		}
		switch {
		case errors.Is(err, sqlite.ErrNoApproval):
			return remoteResult{}
		case errors.Is(err, sqlite.ErrDecided):
			return remoteResult{Found: true, Status: http.StatusConflict, Error: err.Error()}
		case errors.Is(err, approvals.ErrNodeDecider), errors.Is(err, approvals.ErrNoDecider):
			return remoteResult{Found: true, Status: http.StatusBadRequest, Error: err.Error()}
		case err != nil:
			return remoteResult{Found: true, Status: http.StatusInternalServerError, Error: err.Error()}
		}
		b, _ := json.Marshal(a)
		return remoteResult{Found: true, Status: http.StatusOK, Approval: b}
	case remoteList:
		list, err := n.gate.List(ctx, op.State, min(max(op.Limit, 1), maxApprovalsLimit))
		if err != nil {
			return remoteResult{Found: true, Status: http.StatusInternalServerError, Error: err.Error()}
		}
		res := remoteResult{Found: true, Status: http.StatusOK}
		size := 0
		for _, a := range list {
			b, _ := json.Marshal(a) // plain fields: cannot fail
			if size += len(b) + 1; size > maxRemoteReply {
				res.Truncated = true
				break
			}
			a.Node = n.cfg.NodeID
			res.Approvals = append(res.Approvals, a)
		}
		return res
	}
	return remoteResult{}
}

// listOthers asks every other member for its approvals in state (""
// for all), at most limit each, at most maxRemoteOps members at once and
// remoteAskTimeout each. unanswered names the members that did not
// answer in time (or answered an error); truncated is set when one left
// its oldest out to keep its answer bounded.
func (n *Node) listOthers(ctx context.Context, state string, limit int) (list []persistence.Approval, unanswered []string, truncated bool) {
	cn := n.cluster
	if cn == nil || cn.c == nil {
		return nil, nil, false
	}
	b, _ := json.Marshal(remoteOp{Op: remoteList, State: state, Limit: limit}) // plain fields: cannot fail
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		slots = make(chan struct{}, maxRemoteOps)
	)
	for _, m := range cn.c.Status().Members {
		if m.Self {
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			mu.Lock()
			unanswered = append(unanswered, m.Node)
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			var res remoteResult
			reply, err := n.system.Root.RequestFuture(actor.NewPID(m.Address, apiActorName), wrapperspb.Bytes(b), remoteAskTimeout).Result()
			if err == nil {
				if bv, ok := reply.(*wrapperspb.BytesValue); !ok || json.Unmarshal(bv.Value, &res) != nil {
					err = errors.New("a malformed answer")
				} else if res.Status != http.StatusOK {
					err = fmt.Errorf("status %d: %s", res.Status, res.Error)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				n.log.Warn("another node did not list its approvals", "node", m.Node, "node_address", m.Address, "err", err)
				unanswered = append(unanswered, m.Node)
				return
			}
			for _, a := range res.Approvals {
				a.Node = res.Node
				list = append(list, a)
			}
			truncated = truncated || res.Truncated
		}()
	}
	wg.Wait()
	slices.Sort(unanswered)
	return list, unanswered, truncated
}

// askOthers hands op to the other nodes in turn, for a question or an
// approval this node does not have: the one that has it answers. ok is
// false on a node alone, or when no node has it.
//
// An id of another shape than this build gives questions and approvals
// names none on any node, and is not asked about: the other nodes drop a
// request whose id is over 128 bytes unanswered, so that each such
// request waited remoteAskTimeout for every other node and logged a line
// for each, the id whole.
func (n *Node) askOthers(ctx context.Context, op remoteOp) (res remoteResult, ok bool) {
	cn := n.cluster
	if cn == nil || cn.c == nil || !remoteIDShape(op) {
		return remoteResult{}, false
	}
	b, _ := json.Marshal(op) // plain fields: cannot fail
	for _, addr := range cn.c.OtherAddresses() {
		if ctx.Err() != nil {
			break
		}
		reply, err := n.system.Root.RequestFuture(actor.NewPID(addr, apiActorName), wrapperspb.Bytes(b), remoteAskTimeout).Result()
		if err != nil {
			if suppressed, log := cn.askLog.Allow(time.Now()); log {
				n.log.Warn("another node did not answer about a question or approval", "node_address", addr, "id", op.ID, "err", err,
					"suppressed_before", suppressed)
			}
			continue
		}
		m, isBytes := reply.(*wrapperspb.BytesValue)
		if !isBytes || json.Unmarshal(m.Value, &res) != nil || !res.Found {
			continue
		}
		cn.apiForwarded.Add(1)
		return res, true
	}
	return remoteResult{}, false
}

// remoteIDShape reports whether op's id has the shape of the ids of what
// op is about (approvals.ValidID, validQuestionID).
func remoteIDShape(op remoteOp) bool {
	switch op.Op {
	case remoteAnswer:
		return validQuestionID(op.ID)
	case remoteApproval, remoteApprove, remoteDeny:
		return approvals.ValidID(op.ID)
	}
	return false
}

// writeRemote writes what another node answered as this API's response.
func writeRemote(w http.ResponseWriter, res remoteResult) {
	switch {
	case res.Status == http.StatusNoContent:
		w.WriteHeader(res.Status)
	case res.Approval != nil && res.Status == http.StatusOK:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(res.Status)
		_, _ = w.Write(append(res.Approval, '\n'))
	default:
		httpError(w, res.Status, res.Error+" (on node "+res.Node+")")
	}
}
