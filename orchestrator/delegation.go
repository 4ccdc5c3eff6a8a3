package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// DelegationConf is [delegation] in evoclaw.toml: which agents' own tool
// loops may use which other agents' tools through the node. The zero value
// allows nothing.
type DelegationConf struct {
	// MaxDepth bounds a chain of delegations: a call made by the loop of
	// the n-th agent of a chain is hop n, refused beyond MaxDepth. Zero
	// means DefaultDelegationMaxDepth.
	MaxDepth int `toml:"max_depth"`
	// Allow are the rules; a call is allowed when one of them matches it.
	Allow []DelegationRule `toml:"allow"`
}

// DelegationRule lets the loop of agents matching From use, on agents
// matching To, the tools matching one of Tools, and their own loops when
// Prompt is set. From, To and Tools are patterns of path.Match ("pi*",
// "read_*", "*").
type DelegationRule struct {
	From   string   `toml:"from"`
	To     string   `toml:"to"`
	Tools  []string `toml:"tools"`
	Prompt bool     `toml:"prompt"`
}

// Bounds of delegation.
const (
	DefaultDelegationMaxDepth = 2
	// MaxDelegationMaxDepth is the largest max_depth accepted: a chain
	// carries at most wire.MaxDelegationChain agents.
	MaxDelegationMaxDepth = wire.MaxDelegationChain - 1
	// maxDelegationGrants bounds the delegation tokens kept; the oldest go
	// first, and a call under a forgotten token is refused.
	maxDelegationGrants = 4096
	// delegationGrantTTL is how long a token is good for at least: longer
	// than a prompt runs by default (the edge_call category's maximum is
	// 10 min). grantTTL makes it longer when the timeouts are.
	delegationGrantTTL = time.Hour
	// maxDelegatedRunning bounds delegated calls running at once, in all
	// and per calling agent; more are refused as busy.
	maxDelegatedRunning         = 32
	maxDelegatedRunningPerAgent = 8
	// maxDelegatedKept bounds the answers kept for a redelivered request.
	maxDelegatedKept = 256
	// maxDelegatedAnswering bounds the answers being published that are not
	// a call's (refusals before a call starts, redeliveries); beyond it an
	// answer is dropped and the caller's wait ends at its timeout.
	maxDelegatedAnswering = 64
	// delegationMargin is what the node keeps of the caller's wait for
	// the round trip of the answer.
	delegationMargin = time.Second
)

// EventDelegationRefused is the quota key of refused delegated calls: a
// few per agent per window are audited (tool_calls rows), the rest counted.
const EventDelegationRefused = "delegation_refused"

func (d *DelegationConf) validate() []error {
	var errs []error
	switch {
	case d.MaxDepth < 0 || d.MaxDepth > MaxDelegationMaxDepth:
		errs = append(errs, fmt.Errorf("delegation: max_depth = %d, want 1 to %d (0: the default, %d)", d.MaxDepth, MaxDelegationMaxDepth, DefaultDelegationMaxDepth))
	case d.MaxDepth == 0:
		d.MaxDepth = DefaultDelegationMaxDepth
	}
	pattern := func(i int, field, p string) {
		if p == "" {
			errs = append(errs, fmt.Errorf("delegation.allow[%d]: %s is empty", i, field))
			return
		}
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, fmt.Errorf("delegation.allow[%d]: %s = %q is not a valid pattern: %w", i, field, p, err))
			return
		}
		for _, c := range p {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-.*?[]^!", c)) {
				errs = append(errs, fmt.Errorf("delegation.allow[%d]: %s = %q: character %q can match no agent or tool name", i, field, p, c))
				return
			}
		}
	}
	for i, r := range d.Allow {
		pattern(i, "from", r.From)
		pattern(i, "to", r.To)
		for j, t := range r.Tools {
			pattern(i, fmt.Sprintf("tools[%d]", j), t)
		}
		if len(r.Tools) == 0 && !r.Prompt {
			errs = append(errs, fmt.Errorf("delegation.allow[%d]: allows nothing: give tools, prompt = true, or both", i))
		}
	}
	return errs
}

func match(pattern, s string) bool {
	ok, _ := path.Match(pattern, s)
	return ok
}

// allows returns the first rule letting from use tool of to (tool ""
// asks for to's own loop), and whether there is one.
func (d DelegationConf) allows(from, to, tool string) (DelegationRule, bool) {
	for _, r := range d.Allow {
		if !match(r.From, from) || !match(r.To, to) {
			continue
		}
		if tool == "" {
			if r.Prompt {
				return r, true
			}
			continue
		}
		for _, t := range r.Tools {
			if match(t, tool) {
				return r, true
			}
		}
	}
	return DelegationRule{}, false
}

// grant is what one delegation token stands for.
type grant struct {
	agent   string   // the agent it was given to
	chain   []string // agents whose loops led to it, agent last
	expires time.Time
}

// delegator runs the calls agents delegate: it offers tools on prompts,
// checks every call, runs it like a chat's call and answers.
type delegator struct {
	conf DelegationConf
	n    *Node

	mu      sync.Mutex
	grants  map[string]grant
	order   []string            // tokens in the order given, for eviction
	running map[string]struct{} // agent + "\x00" + request_id
	perAg   map[string]int
	kept    map[string][]byte // answers of finished requests, for redelivery
	keptFIF []string
	closed  bool
	// answering counts the goroutines of answerLocked.
	answering int

	// ctx ends the calls running when the node closes; wg counts the
	// goroutines of receive.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newDelegator(c DelegationConf, n *Node) *delegator {
	ctx, cancel := context.WithCancel(context.Background())
	return &delegator{conf: c, n: n, grants: map[string]grant{}, running: map[string]struct{}{},
		perAg: map[string]int{}, kept: map[string][]byte{}, ctx: ctx, cancel: cancel}
}

// close ends the running calls (each answered as interrupted) and waits
// for them; later requests are dropped.
func (d *delegator) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}

// goLocked runs f in a goroutine close waits for; d.mu is held. False
// when closed (f does not run).
func (d *delegator) goLocked(f func()) bool {
	if d.closed {
		return false
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
	return true
}

// answerLocked runs before (when set) and publishes b to agentID in a
// goroutine, at most
// maxDelegatedAnswering at once; d.mu is held. (The MQTT handler must not
// wait for a publish: its acknowledgement comes through the same client.)
func (d *delegator) answerLocked(agentID, requestID string, b []byte, before func()) {
	if d.answering >= maxDelegatedAnswering {
		d.n.in.log.Warn("dropping a delegated call's answer: too many being sent", "agent", agentID, "request_id", requestID)
		return
	}
	if d.goLocked(func() {
		if before != nil {
			before()
		}
		d.publish(agentID, requestID, b)
		d.mu.Lock()
		d.answering--
		d.mu.Unlock()
	}) {
		d.answering++
	}
}

func (d *delegator) enabled() bool { return d != nil && len(d.conf.Allow) > 0 }

// offerChat is the Delegation of a prompt a chat sends to agentID.
func (d *delegator) offerChat(agentID string) *wire.Delegation {
	return d.offer([]string{agentID})
}

// offer is the Delegation of a prompt to the last agent of chain: the
// tools of online agents the rules let it use, its own excepted; nil when
// there are none. A call that would close a loop or go beyond max_depth is
// still offered, and refused when made, with an error saying why: the
// model learns it, and the check is on the call either way.
func (d *delegator) offer(chain []string) *wire.Delegation {
	if !d.enabled() {
		return nil
	}
	from := chain[len(chain)-1]
	var tools []wire.RemoteTool
	for _, a := range d.n.edges.Catalog().Callable() {
		if a.ID == from {
			continue
		}
		if _, ok := d.conf.allows(from, a.ID, ""); ok && len(tools) < wire.MaxRemoteTools {
			desc := "Ask edge agent " + a.ID + " in natural language; its own model and tools answer."
			if a.Capabilities != "" {
				desc += " It says: " + a.Capabilities
			}
			tools = append(tools, wire.RemoteTool{AgentID: a.ID, Prompt: true, Description: desc,
				TimeoutMS: d.waitFor(actors.CategoryEdgeCall, 0).Milliseconds()})
		}
		for _, t := range a.Tools {
			if _, ok := d.conf.allows(from, a.ID, t.Name); ok && len(tools) < wire.MaxRemoteTools {
				tools = append(tools, wire.RemoteTool{AgentID: a.ID, Tool: t.Name, Description: t.Description + " (on edge agent " + a.ID + ")",
					Parameters: t.Parameters, TimeoutMS: d.waitFor(actors.Category(t.Category, t.Name), t.TimeoutMS).Milliseconds()})
			}
		}
	}
	if len(tools) == 0 {
		return nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil
	}
	token := d.n.delegationToken(hex.EncodeToString(b[:]))
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.n.now()
	for len(d.order) > 0 && (len(d.order) >= maxDelegationGrants || d.grants[d.order[0]].expires.Before(now)) {
		delete(d.grants, d.order[0])
		d.order = d.order[1:]
	}
	d.grants[token] = grant{agent: from, chain: append([]string(nil), chain...), expires: now.Add(d.grantTTL())}
	d.order = append(d.order, token)
	return &wire.Delegation{Token: token, Chain: append([]string(nil), chain...), Tools: tools}
}

// grantTTL is how long a token is good for: an hour, or longer when a
// chat (which may wait for an approval before the prompt goes out) and the
// longest prompt may take longer.
func (d *delegator) grantTTL() time.Duration {
	longest := d.n.convs.CallTimeout(actors.CategoryEdgeCall, 1<<40) // clamped at the category's maximum
	return max(delegationGrantTTL, d.n.cfg.Loop.ChatTimeout.Duration+longest+time.Minute)
}

// waitFor is how long a caller should wait for a call of a tool of
// category with its own timeout ownMS: the call's timeout, its round trip
// and the margin of the answer.
func (d *delegator) waitFor(category string, ownMS int64) time.Duration {
	return d.n.convs.CallTimeout(category, ownMS) + d.n.convs.ReplySlack() + 2*delegationMargin
}

func inChain(chain []string, id string) bool {
	for _, c := range chain {
		if c == id {
			return true
		}
	}
	return false
}

// receive takes a delegate report on the MQTT client's goroutine: it
// decodes and checks it at once (nothing there waits), answers a refusal
// or a redelivery, and runs an allowed call in a goroutine of its own.
func (d *delegator) receive(agentID string, r wire.Report) {
	req, err := wire.DecodeDelegateRequest(r)
	if err != nil {
		d.n.dropped(agentID, wire.KindReports, r.Payload, err)
		if id := r.RequestID(); id != "" {
			res := skills.Failed(wire.ErrInvalidParams, err.Error()).Wire("")
			res.RequestID = id
			b := d.encode(id, res)
			d.mu.Lock()
			d.answerLocked(agentID, id, b, nil)
			d.mu.Unlock()
		}
		return
	}
	chain, err := d.check(agentID, req)
	if err != nil {
		d.refuse(agentID, req, chain, err)
		return
	}
	key := agentID + "\x00" + req.RequestID
	d.mu.Lock()
	defer d.mu.Unlock()
	if b, ok := d.kept[key]; ok {
		d.answerLocked(agentID, req.RequestID, b, nil) // a redelivery: the same answer again
		return
	}
	if _, ok := d.running[key]; ok {
		return // a redelivery of a call that runs: its answer will come
	}
	if len(d.running) >= maxDelegatedRunning || d.perAg[agentID] >= maxDelegatedRunningPerAgent {
		busy := skills.Failed(wire.ErrBusy, fmt.Sprintf("the orchestrator runs %d delegated calls already (at most %d, %d per agent); retry later",
			len(d.running), maxDelegatedRunning, maxDelegatedRunningPerAgent)).Wire(delegatedName(req))
		busy.RequestID = req.RequestID
		d.answerLocked(agentID, req.RequestID, d.encode(req.RequestID, busy), nil)
		return
	}
	started := d.goLocked(func() {
		res := d.run(agentID, req, chain).Wire(delegatedName(req))
		res.RequestID = req.RequestID
		b := d.encode(req.RequestID, res)
		d.mu.Lock()
		delete(d.running, key)
		if d.perAg[agentID]--; d.perAg[agentID] <= 0 {
			delete(d.perAg, agentID)
		}
		if len(d.keptFIF) >= maxDelegatedKept {
			delete(d.kept, d.keptFIF[0])
			d.keptFIF = d.keptFIF[1:]
		}
		d.kept[key] = b
		d.keptFIF = append(d.keptFIF, key)
		d.mu.Unlock()
		d.publish(agentID, req.RequestID, b)
	})
	if started {
		d.running[key] = struct{}{}
		d.perAg[agentID]++
	}
}

// delegatedName is the name a delegated call is audited under:
// {agent}__{tool}, or {agent}__prompt for the agent's own loop.
func delegatedName(req wire.DelegateRequest) string {
	if req.Tool == "" {
		return req.AgentID + actors.ToolSep + wire.CmdPrompt
	}
	return req.AgentID + actors.ToolSep + req.Tool
}

// errRefused marks a call the rules refuse.
var errRefused = errors.New("delegation refused")

// check decides whether agentID may make req: its token, the chain, the
// rules. It returns the chain the call extends.
func (d *delegator) check(agentID string, req wire.DelegateRequest) ([]string, error) {
	if !d.enabled() {
		return nil, fmt.Errorf("%w: this orchestrator allows no delegation ([delegation] has no allow rules)", errRefused)
	}
	d.mu.Lock()
	g, ok := d.grants[req.Token]
	d.mu.Unlock()
	if !ok || g.agent != agentID || g.expires.Before(d.n.now()) {
		return nil, fmt.Errorf("%w: token %.24q is not one this orchestrator gave agent %q for a prompt it answers (unknown, expired or another agent's)",
			errRefused, req.Token, agentID)
	}
	chain := g.chain
	if inChain(chain, req.AgentID) {
		return chain, fmt.Errorf("%w: delegation loop %s → %s: agent %q is already in the chain", errRefused,
			strings.Join(chain, " → "), req.AgentID, req.AgentID)
	}
	if len(chain) > d.conf.MaxDepth {
		return chain, fmt.Errorf("%w: delegation too deep: %s → %s would be hop %d, [delegation] max_depth = %d", errRefused,
			strings.Join(chain, " → "), req.AgentID, len(chain), d.conf.MaxDepth)
	}
	if _, ok := d.conf.allows(agentID, req.AgentID, req.Tool); !ok {
		if req.Tool == "" {
			return chain, fmt.Errorf("%w: no [[delegation.allow]] rule lets agent %q ask agent %q's own loop (a rule with from = %q, to = %q, prompt = true)",
				errRefused, agentID, req.AgentID, agentID, req.AgentID)
		}
		return chain, fmt.Errorf("%w: no [[delegation.allow]] rule lets agent %q use tool %q of agent %q (a rule with from = %q, to = %q, tools = [%q])",
			errRefused, agentID, req.Tool, req.AgentID, agentID, req.AgentID, req.Tool)
	}
	return chain, nil
}

// refuse answers a call the rules refuse; it is audited within the
// agent's quota of events and logged at a bounded rate, off the MQTT
// handler. It takes no running call's place: a flood of refused calls
// leaves the allowed ones their room.
func (d *delegator) refuse(agentID string, req wire.DelegateRequest, chain []string, err error) {
	res := skills.Failed(wire.ErrPermissionDenied, strings.TrimPrefix(err.Error(), errRefused.Error()+": "))
	w := res.Wire(delegatedName(req))
	w.RequestID = req.RequestID
	b := d.encode(req.RequestID, w)
	_, audit := d.n.in.events.Allow(actors.EventQuotaKey(agentID, EventDelegationRefused), d.n.now())
	d.n.in.log.Warn("delegated call refused", "agent", agentID, "target", req.AgentID, "tool", delegatedName(req), "err", err)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answerLocked(agentID, req.RequestID, b, func() {
		if audit {
			convID, call := delegatedCall(agentID, req, chain)
			d.n.convs.AuditRefusal(actors.OneCall{ConversationID: convID, Call: call, Target: actors.Target{AgentID: req.AgentID}}, res)
		}
	})
}

// delegatedCall is what a delegated call is audited as: the
// conversation naming the chain of callers, and the call.
func delegatedCall(agentID string, req wire.DelegateRequest, chain []string) (string, llm.ToolCall) {
	convID := "delegation:" + agentID
	if len(chain) > 0 {
		convID = "delegation:" + strings.Join(chain, ">")
	}
	args := req.Parameters
	if req.Tool == "" {
		args, _ = json.Marshal(map[string]string{"query": req.Query}) // a string always marshals
	}
	return convID, llm.ToolCall{ID: req.RequestID, Name: delegatedName(req), Arguments: args}
}

// run runs one delegated call the rules allow, as chain's last agent.
func (d *delegator) run(agentID string, req wire.DelegateRequest, chain []string) skills.Output {
	convID, call := delegatedCall(agentID, req, chain)
	args := call.Arguments
	refused := func(target actors.Target, res skills.Output) skills.Output {
		d.n.convs.AuditRefusal(actors.OneCall{ConversationID: convID, Call: call, Target: target}, res)
		return res
	}
	var target actors.Target
	if req.Tool == "" {
		target = actors.Target{AgentID: req.AgentID, Tool: actors.EdgeCallTool, Category: actors.CategoryEdgeCall, Args: args,
			Prompt: &wire.PromptPayload{Prompt: req.Query, EnableTools: true, Delegation: d.offer(append(append([]string(nil), chain...), req.AgentID))}}
		if a, ok := d.n.edges.Catalog().Agents[req.AgentID]; !ok || !a.Callable() {
			return refused(actors.Target{AgentID: req.AgentID}, skills.Failed(wire.ErrAgentOffline, fmt.Sprintf("edge agent %q is offline", req.AgentID)))
		}
	} else {
		t, bad := (&actors.EdgeToolbox{Edges: d.n.edges}).Resolve(call)
		if bad != nil {
			return refused(actors.Target{AgentID: req.AgentID}, *bad)
		}
		target = t
	}
	var limit time.Duration
	if req.TimeoutMS > 0 {
		limit = time.Duration(req.TimeoutMS)*time.Millisecond - d.n.convs.ReplySlack() - delegationMargin
		if limit <= 0 {
			return refused(target, skills.Failed(wire.ErrTimeout, fmt.Sprintf("the caller waits %d ms, too short for a call through the orchestrator", req.TimeoutMS)))
		}
	}
	return d.n.convs.RunOne(d.ctx, d.n.system.Root, actors.OneCall{ConversationID: convID, Call: call, Target: target, MaxTimeout: limit}).Output
}

// encode builds the delegate_result command; a result too big for one
// message becomes an error saying so.
func (d *delegator) encode(requestID string, res wire.ToolResult) []byte {
	enc := func(r wire.ToolResult) []byte {
		cmd, err := wire.NewCommand(wire.CmdDelegateResult, requestID, r)
		if err != nil {
			return nil
		}
		b, _ := json.Marshal(cmd) // plain fields
		return b
	}
	b := enc(res)
	if b == nil || len(b) > wire.MaxMessageBytes {
		big := skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("the result of the delegated call is over %d bytes, too big to pass on", wire.MaxMessageBytes)).Wire(res.Tool)
		big.RequestID = requestID
		b = enc(big)
	}
	return b
}

func (d *delegator) publish(agentID, requestID string, b []byte) {
	if b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.n.client.Publish(ctx, mqttc.Message{Topic: wire.CommandsTopic(agentID), Payload: b, QoS: 1}); err != nil {
		d.n.in.log.Warn("publish delegated result", "agent", agentID, "request_id", requestID, "err", err)
	}
}
