//go:build !nocluster

package orchestrator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// conversationKind is the cluster kind of a conversation: one grain per
// conversation id, activated on the node disthash assigns it.
const conversationKind = "conversation"

// Bounds of the messages between nodes.
const (
	// maxEnvelope bounds one message's JSON: a chat body plus its framing.
	maxEnvelope = maxChatBody + 64<<10
	// forwardMargin is what a forwarding node waits beyond the chat
	// timeout for the owner's own timeout answer.
	forwardMargin = 10 * time.Second
	// grainIdle stops a conversation's grain after this long without a
	// chat; the next chat activates it again.
	grainIdle = actors.DefaultIdleTimeout
)

// The envelope ops.
const (
	opChat     = "chat"
	opCancel   = "cancel"
	opProgress = "progress"
	opAnswer   = "answer"
)

// envelope is every message between nodes about a chat, as JSON in a
// protobuf BytesValue (protoactor remote carries protobuf messages; this
// keeps the schema in Go without generated code).
type envelope struct {
	Op string `json:"op"`
	// Req names the forwarded chat on both sides.
	Req string `json:"req"`
	// ReplyAddr and ReplyID are the forwarding node's reply actor (chat).
	ReplyAddr string `json:"reply_addr,omitempty"`
	ReplyID   string `json:"reply_id,omitempty"`
	// Chat is the forwarded input (chat).
	Chat *fwdChat `json:"chat,omitempty"`
	// Progress is one step of the chat (progress).
	Progress *actors.Progress `json:"progress,omitempty"`
	// Answer and Error are the outcome (answer).
	Answer *fwdAnswer       `json:"answer,omitempty"`
	Error  *RemoteChatError `json:"error,omitempty"`
}

// fwdChat is the part of ChatInput that crosses nodes.
type fwdChat struct {
	ConversationID string `json:"conversation_id"`
	Text           string `json:"text"`
	System         string `json:"system,omitempty"`
	MaxTokens      int    `json:"max_tokens,omitempty"`
	// Sampling are the chat's sampling hints (checked by decodeEnvelope).
	Sampling      llm.Sampling `json:"sampling,omitzero"`
	Person        bool         `json:"person,omitempty"`
	MaxIterations int          `json:"max_iterations,omitempty"`
	Parent        string       `json:"parent,omitempty"`
	Depth         int          `json:"depth,omitempty"`
	// Spawns is the share of its tree's spawn budget a spawned chat
	// (Depth > 0) brings (actors.SpawnBudget.Share); absent for a chat
	// whose tree has no budget.
	Spawns *int64 `json:"spawns,omitempty"`
	// Progress asks for the chat's steps.
	Progress bool `json:"progress,omitempty"`
	// Client is the API client that sent the chat to the first node.
	Client *ChatClient `json:"client,omitempty"`
}

// forwarded is in as it crosses to another node. A spawned chat takes
// with it a share of its tree's budget, which the tree here gives up.
func forwarded(in ChatInput) *fwdChat {
	c := &fwdChat{ConversationID: in.ConversationID, Text: in.Text, System: in.System, MaxTokens: in.MaxTokens, Sampling: in.Sampling, Person: in.Person,
		MaxIterations: in.MaxIterations, Parent: in.Parent, Depth: in.Depth, Progress: in.Progress != nil, Client: in.Client}
	if n, ok := in.Spawns.Share(); ok && in.Depth > 0 {
		c.Spawns = &n
	}
	return c
}

// input is the chat c asks the node to run in conversation id; maxSpawns
// is the node's [loop] max_spawns_per_message. A spawned chat runs within
// the share it brought, at most maxSpawns; without one (a node from before
// shares were sent) it may start nothing: a tree's budget never grows by
// crossing nodes.
func (c *fwdChat) input(id string, maxSpawns int) ChatInput {
	in := ChatInput{ConversationID: id, Text: c.Text, System: c.System, MaxTokens: c.MaxTokens, Sampling: c.Sampling, Person: c.Person,
		MaxIterations: c.MaxIterations, Parent: c.Parent, Depth: c.Depth, Client: c.Client.bounded(), local: true}
	if c.Depth > 0 {
		share := int64(0)
		if c.Spawns != nil {
			share = min(max(*c.Spawns, 0), int64(maxSpawns))
		}
		in.Spawns = actors.NewSpawnBudget(int(share))
	}
	return in
}

// fwdAnswer is actors.Answer without its error.
type fwdAnswer struct {
	ConversationID string               `json:"conversation_id"`
	Text           string               `json:"text"`
	Iterations     int                  `json:"iterations"`
	ToolCalls      int                  `json:"tool_calls"`
	Usage          llm.Usage            `json:"usage"`
	Limit          string               `json:"limit,omitempty"`
	Calls          []actors.CallSummary `json:"calls,omitempty"`
	FinishReason   string               `json:"finish_reason,omitempty"`
}

// decodeEnvelope parses a message from another node: bounded, known op,
// the fields its op needs.
func decodeEnvelope(b []byte) (*envelope, error) {
	if len(b) > maxEnvelope {
		return nil, fmt.Errorf("cluster message of %d bytes, at most %d", len(b), maxEnvelope)
	}
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("cluster message: %w", err)
	}
	if e.Req == "" || len(e.Req) > 64 {
		return nil, errors.New("cluster message: req: want 1-64 characters")
	}
	switch e.Op {
	case opChat:
		if e.Chat == nil || e.ReplyAddr == "" || e.ReplyID == "" {
			return nil, errors.New("cluster message: chat without its input or reply actor")
		}
		if re := checkSampling(e.Chat.Sampling); re != nil {
			return nil, fmt.Errorf("cluster message: chat sampling: %s", re.Message)
		}
	case opCancel:
	case opProgress:
		if e.Progress == nil {
			return nil, errors.New("cluster message: progress without its step")
		}
	case opAnswer:
		if (e.Answer == nil) == (e.Error == nil) {
			return nil, errors.New("cluster message: answer wants exactly one of answer and error")
		}
	default:
		return nil, fmt.Errorf("cluster message: unknown op %.20q", e.Op)
	}
	return &e, nil
}

func (e *envelope) message() *wrapperspb.BytesValue {
	b, _ := json.Marshal(e) // only marshalable types
	return wrapperspb.Bytes(b)
}

// routable says whether a chat may run on another node: one whose input
// is all data (a job's filtered toolbox or a seeded history is not).
func routable(in ChatInput) bool { return !in.local && in.Toolbox == nil && in.Seed == nil }

// startCluster joins the cluster [cluster] names; a node without it
// starts nothing.
func (n *Node) startCluster() error {
	if n.cluster == nil {
		return nil
	}
	c, err := cluster.Start(n.system, n.cfg.NodeID, n.cfg.Cluster, []*pcluster.Kind{n.conversationKind(), n.agentGrainKind()},
		n.log.With("component", "cluster"))
	if err != nil {
		return err
	}
	cn := n.cluster
	cn.c = c
	if err := n.startRelay(); err != nil {
		return err
	}
	if err := n.startRemoteAPI(); err != nil {
		return err
	}
	if err := n.startCallRouter(); err != nil {
		return err
	}
	c.OnChange(func() { n.system.Root.Send(cn.router, &topologyMoved{}) })
	c.OnLeft(func(left []cluster.Member) {
		for _, m := range left {
			cn.chat.fwd.lost(m.Address, m.Node)
		}
		// A report the broker handed to a node that died before relaying
		// it is gone: ask the agents again for every awaited call.
		n.system.Root.Send(n.edges.PID, &actors.ResendPending{})
	})
	return nil
}

// conversationKindProps is the grain of a conversation on its owner: it
// runs the forwarded chats in the node's conversation actors.
func (n *Node) conversationKind() *pcluster.Kind {
	return pcluster.NewKind(conversationKind, actor.PropsFromProducer(func() actor.Actor {
		return &conversationGrain{n: n, running: map[string]context.CancelFunc{}}
	}))
}

// conversationGrain is one conversation's cluster identity on the node
// that owns it.
type conversationGrain struct {
	n  *Node
	id string
	// running cancels the forwarded chats in flight by req; bounded by
	// the conversation's queue (a chat past it is answered busy at once).
	mu      sync.Mutex
	running map[string]context.CancelFunc
}

func (g *conversationGrain) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *pcluster.ClusterInit:
		g.id = m.Identity.Identity
		ctx.SetReceiveTimeout(grainIdle)
	case *actor.ReceiveTimeout:
		g.mu.Lock()
		idle := len(g.running) == 0
		g.mu.Unlock()
		if idle {
			ctx.Poison(ctx.Self())
		}
	case *actor.Stopping:
		// The conversation moved to another node (or this one stops): its
		// actor here must not answer a later chat from a stale memory.
		if g.id != "" {
			ctx.Send(g.n.convs.PID, &actors.Evict{ConversationID: g.id})
		}
	case *wrapperspb.BytesValue:
		e, err := decodeEnvelope(m.Value)
		if err != nil {
			g.n.log.Warn("dropping cluster message", "conversation", g.id, "err", err)
			return
		}
		switch e.Op {
		case opChat:
			g.run(ctx.ActorSystem().Root, e)
		case opCancel:
			g.mu.Lock()
			cancel := g.running[e.Req]
			g.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
	}
}

// run runs a forwarded chat here and sends its steps and outcome to the
// forwarding node's reply actor.
func (g *conversationGrain) run(root *actor.RootContext, e *envelope) {
	reply := actor.NewPID(e.ReplyAddr, e.ReplyID)
	c := e.Chat
	in := c.input(g.id, cmp.Or(g.n.cfg.Loop.MaxSpawnsPerMessage, DefaultMaxSpawnsPerMessage))
	if c.ConversationID != g.id {
		root.Send(reply, (&envelope{Op: opAnswer, Req: e.Req, Error: &RemoteChatError{Node: g.n.cfg.NodeID,
			Status: http.StatusBadRequest, Type: ErrTypeInvalidRequest, Message: "conversation id does not match its grain"}}).message())
		return
	}
	if c.Progress {
		in.Progress = func(p actors.Progress) {
			root.Send(reply, (&envelope{Op: opProgress, Req: e.Req, Progress: &p}).message())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.mu.Lock()
	g.running[e.Req] = cancel
	g.mu.Unlock()
	go func() {
		defer func() {
			g.mu.Lock()
			delete(g.running, e.Req)
			g.mu.Unlock()
			cancel()
		}()
		ans, err := g.n.Converse(ctx, in)
		out := &envelope{Op: opAnswer, Req: e.Req}
		if err != nil {
			out.Error = g.n.remoteChatError(g.id, err)
		} else {
			out.Answer = &fwdAnswer{ConversationID: ans.ConversationID, Text: ans.Text, Iterations: ans.Iterations,
				ToolCalls: ans.ToolCalls, Usage: ans.Usage, Limit: ans.Limit, Calls: ans.Calls, FinishReason: ans.FinishReason}
		}
		root.Send(reply, out.message())
	}()
}

// remoteChatError is how this node tells the node that forwarded a chat
// of conversation conv why it failed here: its status and type, whether
// it was refused before it started, and for a refusal of its input
// ([loop] chat_input_mb_per_hour) the Retry-After this node would answer.
func (n *Node) remoteChatError(conv string, err error) *RemoteChatError {
	code, typ := chatErrorStatus(err)
	re := &RemoteChatError{Node: n.cfg.NodeID, Status: code, Type: typ, Message: err.Error(), NotStarted: refusedBeforeStart(err),
		RetryAfterS: remoteRetryAfter(err)}
	if code := chatErrorCode(err); code != nil {
		// a cause the client can test: its code, and its message alone
		re.Code, re.Message = *code, chatErrorMessage(conv, err)
	}
	return re
}

// relayedChatError is the error of a chat of conversation conv that
// failed on the node it was forwarded to, as re says. Its message names
// the chat once: the owner's often does already.
func relayedChatError(conv string, re *RemoteChatError) error {
	if re.Type == ErrTypeNodeLost {
		return fmt.Errorf("chat %s: %w (%s)", conv, ErrNodeLost, re.Node)
	}
	if strings.HasPrefix(re.Message, "chat "+conv+": ") {
		return re
	}
	return fmt.Errorf("chat %s: %w", conv, re)
}

// clusterChat is the forwarding state of a clustered node.
type clusterChat struct {
	fwd forwards
}

// forwards are the chats this node forwarded, by owner address, so that
// an owner leaving the cluster ends them at once.
type forwards struct {
	mu sync.Mutex
	by map[string]map[string]chan<- *envelope // owner address -> req -> outcome
}

func (f *forwards) add(owner, req string, ch chan<- *envelope) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.by == nil {
		f.by = map[string]map[string]chan<- *envelope{}
	}
	if f.by[owner] == nil {
		f.by[owner] = map[string]chan<- *envelope{}
	}
	f.by[owner][req] = ch
}

func (f *forwards) remove(owner, req string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.by[owner], req)
	if len(f.by[owner]) == 0 {
		delete(f.by, owner)
	}
}

// lost ends every chat forwarded to owner with ErrNodeLost.
func (f *forwards) lost(owner, node string) {
	f.mu.Lock()
	chs := f.by[owner]
	delete(f.by, owner)
	f.mu.Unlock()
	for req, ch := range chs {
		select {
		case ch <- &envelope{Op: opAnswer, Req: req, Error: &RemoteChatError{Node: node, Status: http.StatusServiceUnavailable,
			Type: ErrTypeNodeLost, Message: ErrNodeLost.Error()}}:
		default:
		}
	}
}

// converseCluster runs in on the node owning its conversation: here when
// that is this node, else forwarded to the owner's grain. ok is false
// when the chat is to run here.
func (n *Node) converseCluster(ctx context.Context, in ChatInput) (ans *actors.Answer, err error, ok bool) {
	cn := n.cluster
	pid := cn.c.Proto().Get(in.ConversationID, conversationKind)
	if pid == nil {
		return nil, notStarted{fmt.Errorf("chat %s: %w: no node can take the conversation now", in.ConversationID, ErrNotReady)}, true
	}
	if pid.Address == n.system.Address() {
		return nil, nil, false
	}
	cn.forwarded.Add(1)
	req := newConversationID("fwd")
	out := make(chan *envelope, 1)
	var progress chan *envelope
	if in.Progress != nil {
		progress = make(chan *envelope, 256)
	}
	replyPID := n.system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		m, isBytes := c.Message().(*wrapperspb.BytesValue)
		if !isBytes {
			return
		}
		e, err := decodeEnvelope(m.Value)
		if err != nil || e.Req != req {
			return
		}
		switch e.Op {
		case opProgress:
			if progress != nil {
				select {
				case progress <- e:
				default: // a slow stream drops steps, as the node's own queue does
				}
			}
		case opAnswer:
			select {
			case out <- e:
			default:
			}
		}
	}))
	defer n.system.Root.Stop(replyPID)
	cn.chat.fwd.add(pid.Address, req, out)
	defer cn.chat.fwd.remove(pid.Address, req)
	n.system.Root.Send(pid, (&envelope{Op: opChat, Req: req, ReplyAddr: replyPID.Address, ReplyID: replyPID.Id,
		Chat: forwarded(in)}).message())
	timer := time.NewTimer(n.cfg.Loop.ChatTimeout.Duration + forwardMargin)
	defer timer.Stop()
	for {
		select {
		case e := <-progress:
			in.Progress(*e.Progress)
		case e := <-out:
			if progress != nil {
				for len(progress) > 0 {
					in.Progress(*(<-progress).Progress)
				}
			}
			if e.Error != nil {
				return nil, relayedChatError(in.ConversationID, e.Error), true
			}
			a := e.Answer
			return &actors.Answer{ConversationID: a.ConversationID, Text: a.Text, Iterations: a.Iterations, ToolCalls: a.ToolCalls,
				Usage: a.Usage, Limit: a.Limit, Calls: a.Calls, FinishReason: a.FinishReason}, nil, true
		case <-ctx.Done():
			n.system.Root.Send(pid, (&envelope{Op: opCancel, Req: req}).message())
			return nil, fmt.Errorf("chat %s: %w: %w", in.ConversationID, actors.ErrCanceled, ctx.Err()), true
		case <-timer.C:
			n.system.Root.Send(pid, (&envelope{Op: opCancel, Req: req}).message())
			return nil, fmt.Errorf("chat %s: no answer from its node %s: %w", in.ConversationID, pid.Address, actors.ErrAskTimeout), true
		}
	}
}
