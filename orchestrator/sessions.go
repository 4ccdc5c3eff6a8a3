package orchestrator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/defaults"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/skills"
)

// Names of the session tools: tools a model calls to see the node's agents
// and conversations and to work with other sessions.
const (
	ToolAgentsList      = "agents_list"
	ToolSessionsList    = "sessions_list"
	ToolSessionsHistory = "sessions_history"
	ToolSessionsSend    = "sessions_send"
	ToolSessionsSpawn   = "sessions_spawn"
	ToolSessionStatus   = "session_status"
)

// EventSessionSpawned is the audit event of a sub-agent started by
// sessions_spawn: detail {"parent", "child", "depth", "tools",
// "max_iterations"}.
const EventSessionSpawned = "session_spawned"

// Defaults and bounds of the session tools.
const (
	DefaultMaxSpawnDepth = 2
	DefaultMaxChildren   = 4
	// DefaultMaxSpawnsPerMessage bounds the chats sub-agents and sends
	// start for one message in all, across the tree they make.
	DefaultMaxSpawnsPerMessage = 32
	// sessionsListMax and historyMax bound what one call returns;
	// historyText bounds one message's text in it.
	sessionsListMax = 50
	historyMax      = 50
	historyText     = 2000
	maxAgentsListed = 100
	// maxSpawnTools and maxSpawnPattern bound a spawn's tool list: each
	// pattern is matched against every tool at every turn of the child
	// and every call it makes (50 000 patterns cost 134 ms a match of the
	// tool set, seconds a turn); a job's list has the same bound.
	maxSpawnTools   = 64
	maxSpawnPattern = 200
)

// sessionTools is the Toolbox of the session tools. It keeps no copy of
// any conversation: state comes from the conversation manager, the edge
// registry's Catalog and the audit store. What it does hold is which
// conversation waits on which (a spawn or a send in flight), to bound
// depth and fan-out and to refuse a call that would wait on itself.
type sessionTools struct {
	n             *Node
	maxDepth      int
	maxChildren   int
	chatTimeoutMS int64

	mu sync.Mutex // guards waiter and children
	// waiter maps a conversation to the one waiting on its answer.
	waiter map[string]string
	// children counts the running sub-agents of each conversation.
	children map[string]int
}

var _ actors.Toolbox = (*sessionTools)(nil)

func newSessionTools(n *Node) *sessionTools {
	s := &sessionTools{n: n, maxDepth: n.cfg.Loop.MaxSpawnDepth, maxChildren: n.cfg.Loop.MaxChildren,
		chatTimeoutMS: n.cfg.Loop.ChatTimeout.Duration.Milliseconds(), waiter: map[string]string{}, children: map[string]int{}}
	defaults.Positive(&s.maxDepth, DefaultMaxSpawnDepth)
	defaults.Positive(&s.maxChildren, DefaultMaxChildren)
	return s
}

func obj(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

var (
	sessionIDProp = map[string]any{"type": "string", "description": "the conversation id"}
	sessionDefs   = []llm.ToolDef{
		{Name: ToolAgentsList, Description: "List the edge agents this node knows: id, online state, capabilities and tool names.",
			Parameters: obj(map[string]any{})},
		{Name: ToolSessionsList, Description: "List recent conversations (sessions) of this node, newest first: id, last activity, message count.",
			Parameters: obj(map[string]any{"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": sessionsListMax}})},
		{Name: ToolSessionsHistory, Description: "Read the most recent messages of one conversation.",
			Parameters: obj(map[string]any{"session_id": sessionIDProp,
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": historyMax}}, "session_id")},
		{Name: ToolSessionsSend, Description: "Send a message into another conversation and return its answer.",
			Parameters: obj(map[string]any{"session_id": sessionIDProp, "message": map[string]any{"type": "string"}}, "session_id", "message")},
		{Name: ToolSessionsSpawn, Description: "Start a sub-agent on a task in a new conversation and return its answer. " +
			"It may use only the tools you list (names or patterns such as \"pi-1__*\"), out of yours.",
			Parameters: obj(map[string]any{"task": map[string]any{"type": "string"},
				"tools": map[string]any{"type": "array", "maxItems": maxSpawnTools,
					"items": map[string]any{"type": "string", "maxLength": maxSpawnPattern}},
				"max_iterations": map[string]any{"type": "integer", "minimum": 1}}, "task")},
		{Name: ToolSessionStatus, Description: "Show a conversation's state: running or idle, queued messages, last activity.",
			Parameters: obj(map[string]any{"session_id": sessionIDProp}, "session_id")},
	}
)

// Defs implements actors.Toolbox.
func (s *sessionTools) Defs() []llm.ToolDef { return sessionDefs }

// Resolve implements actors.Toolbox.
func (s *sessionTools) Resolve(call llm.ToolCall) (actors.Target, *skills.Output) {
	for _, d := range sessionDefs {
		if d.Name != call.Name {
			continue
		}
		name := d.Name
		t := actors.Target{Tool: name, Category: actors.CategoryOther, Schema: d.Parameters, Args: call.Arguments,
			Local: func(ctx context.Context, args json.RawMessage) skills.Output {
				caller, ok := actors.CallerFrom(ctx)
				if !ok {
					return skills.Failed(wire.ErrInternal, "session tools run only inside a conversation")
				}
				return s.run(ctx, caller, name, args)
			}}
		if name == ToolSessionsSend || name == ToolSessionsSpawn {
			// A whole chat of another conversation: as long as a chat may take.
			t.Category, t.OwnTimeoutMS = actors.CategoryEdgeCall, s.chatTimeoutMS
		}
		return t, nil
	}
	out := skills.Failed(wire.ErrNotFound, fmt.Sprintf("tool %q not found", call.Name))
	return actors.Target{}, &out
}

// sessionArgs are the arguments of every session tool.
type sessionArgs struct {
	SessionID     string   `json:"session_id"`
	Limit         int      `json:"limit"`
	Message       string   `json:"message"`
	Task          string   `json:"task"`
	Tools         []string `json:"tools"`
	MaxIterations int      `json:"max_iterations"`
}

func (s *sessionTools) run(ctx context.Context, c actors.Caller, name string, raw json.RawMessage) skills.Output {
	var a sessionArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return skills.Failed(wire.ErrInvalidParams, "arguments: "+err.Error())
	}
	if a.SessionID != "" && wire.ValidateAgentID(a.SessionID) != nil {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("session_id %.60q: letters, digits, '-' and '_', at most %d characters",
			a.SessionID, wire.MaxAgentIDLen))
	}
	switch name {
	case ToolAgentsList:
		return s.agents()
	case ToolSessionsList:
		return s.list(ctx, a.Limit)
	case ToolSessionsHistory:
		return s.history(ctx, a.SessionID, a.Limit)
	case ToolSessionsSend:
		return s.send(ctx, c, a.SessionID, a.Message)
	case ToolSessionsSpawn:
		return s.spawn(ctx, c, a)
	case ToolSessionStatus:
		return s.status(ctx, a.SessionID)
	}
	return skills.Failed(wire.ErrNotFound, fmt.Sprintf("tool %q not found", name))
}

// result encodes v as the tool's JSON result.
func result(v any) skills.Output {
	b, err := json.Marshal(v)
	if err != nil {
		return skills.Failed(wire.ErrInternal, "encode result: "+err.Error())
	}
	return skills.Output{Content: []skills.Block{skills.TextBlock(string(b))}}
}

func (s *sessionTools) agents() skills.Output {
	type agent struct {
		ID           string   `json:"id"`
		Online       bool     `json:"online"`
		Capabilities string   `json:"capabilities,omitempty"`
		Tools        []string `json:"tools"`
	}
	cat := s.n.Catalog()
	out := make([]agent, 0, len(cat.Agents))
	for _, a := range cat.Agents {
		ag := agent{ID: a.ID, Online: a.Callable(), Capabilities: a.Capabilities, Tools: []string{}}
		for _, t := range a.Tools {
			ag.Tools = append(ag.Tools, t.Name)
		}
		out = append(out, ag)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if len(out) > maxAgentsListed {
		out = out[:maxAgentsListed]
	}
	return result(map[string]any{"agents": out})
}

func (s *sessionTools) list(ctx context.Context, limit int) skills.Output {
	if limit <= 0 || limit > sessionsListMax {
		limit = 20
	}
	page, _, err := s.n.store.ConversationsPage(ctx, sqlite.ConversationCursor{}, limit)
	if err != nil {
		return skills.Failed(wire.ErrExecutionFailed, "list conversations: "+err.Error())
	}
	type session struct {
		ID           string    `json:"id"`
		LastActivity time.Time `json:"last_activity"`
		Messages     int64     `json:"message_count"`
	}
	out := make([]session, 0, len(page))
	for _, c := range page {
		out = append(out, session{ID: c.ID, LastActivity: c.LastTime, Messages: c.MessageCount})
	}
	return result(map[string]any{"sessions": out})
}

func (s *sessionTools) history(ctx context.Context, id string, limit int) skills.Output {
	if id == "" {
		return skills.Failed(wire.ErrInvalidParams, "session_id: required")
	}
	if limit <= 0 || limit > historyMax {
		limit = 10
	}
	// Previews, as GET .../messages reads them: a message of megabytes
	// is cut inside SQLite, never read whole to show its start.
	msgs, err := s.n.store.RecentPreviews(ctx, id, limit, MaxMessageText, MaxMessageText+1)
	if err != nil {
		return skills.Failed(wire.ErrExecutionFailed, "read conversation: "+err.Error())
	}
	if len(msgs) == 0 {
		return skills.Failed(wire.ErrNotFound, fmt.Sprintf("no conversation %q", id))
	}
	out := make([]MessageView, 0, len(msgs))
	for _, m := range msgs {
		v := previewView(m)
		if len(v.Content) > historyText {
			v.Content, v.Cut = v.Content[:historyText], true
		}
		out = append(out, v)
	}
	return result(map[string]any{"session_id": id, "messages": out, "more": msgs[0].Seq > 1})
}

func (s *sessionTools) status(ctx context.Context, id string) skills.Output {
	if id == "" {
		return skills.Failed(wire.ErrInvalidParams, "session_id: required")
	}
	res, err := actors.Ask(s.n.system.Root, s.n.convs.PID, &actors.StateQuery{ConversationID: id}, 5*time.Second)
	if err != nil {
		return skills.Failed(wire.ErrTimeout, "ask conversation state: "+err.Error())
	}
	st, ok := res.(*actors.SessionState)
	if !ok {
		return skills.Failed(wire.ErrInternal, fmt.Sprintf("conversation state: unexpected reply %T", res))
	}
	// The conversation's summary row, not its newest message: that may be
	// megabytes, read whole to learn its time and Seq.
	sum, stored, err := s.n.store.Conversation(ctx, id)
	if err != nil {
		return skills.Failed(wire.ErrExecutionFailed, err.Error())
	}
	if !stored && !st.Loaded {
		return skills.Failed(wire.ErrNotFound, fmt.Sprintf("no conversation %q", id))
	}
	state := "idle"
	if st.Running {
		state = "running"
	}
	out := map[string]any{"session_id": id, "state": state, "queued": st.Queued}
	if stored {
		out["last_activity"], out["message_count"] = sum.LastTime, sum.MessageCount
	}
	return result(out)
}

// errWaitCycle refuses a send or spawn whose target is already waiting,
// directly or not, on the caller: it would wait on itself.
var errWaitCycle = errors.New("would wait on itself")

// enter records that from waits on to, refusing a cycle.
func (s *sessionTools) enter(from, to string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, n := from, 0; p != "" && n <= len(s.waiter); p, n = s.waiter[p], n+1 {
		if p == to {
			return fmt.Errorf("%w: %q is waiting on this conversation", errWaitCycle, to)
		}
	}
	if _, busy := s.waiter[to]; busy {
		return fmt.Errorf("conversation %q is already answering another session", to)
	}
	s.waiter[to] = from
	return nil
}

// leave undoes enter.
func (s *sessionTools) leave(to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiter, to)
}

func (s *sessionTools) send(ctx context.Context, c actors.Caller, id, text string) skills.Output {
	switch {
	case id == "":
		return skills.Failed(wire.ErrInvalidParams, "session_id: required")
	case text == "":
		return skills.Failed(wire.ErrInvalidParams, "message: required")
	case id == c.ConversationID:
		return skills.Failed(wire.ErrInvalidParams, "sessions_send: that is this conversation; send to another one")
	case c.Depth+1 > s.maxDepth:
		return skills.Failed(wire.ErrPermissionDenied, fmt.Sprintf("sessions_send: depth %d would pass max_spawn_depth %d", c.Depth+1, s.maxDepth))
	}
	// Only into a conversation that is: a send to an id nobody used
	// would make it, and ids can be foreseen (a job run's is a hash of
	// the job, the instant and the agent), so a model could write the
	// history a later run starts from. sessions_spawn makes new ones.
	switch known, err := s.n.conversationExists(ctx, id); {
	case err != nil:
		return skills.Failed(wire.ErrExecutionFailed, "sessions_send: "+err.Error())
	case !known:
		return skills.Failed(wire.ErrNotFound, fmt.Sprintf("sessions_send: no conversation %q; sessions_list shows them, sessions_spawn starts a new one", id))
	}
	if err := s.enter(c.ConversationID, id); err != nil {
		return skills.Failed(wire.ErrPermissionDenied, "sessions_send: "+err.Error())
	}
	defer s.leave(id)
	if !c.Spawns.Take() {
		return s.spent("sessions_send")
	}
	ans, err := s.n.Converse(ctx, ChatInput{ConversationID: id, Text: text, Parent: c.ConversationID, Depth: c.Depth + 1, Spawns: c.Spawns})
	if err != nil {
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("session %s: %v", id, err))
	}
	return result(map[string]any{"session_id": id, "answer": ans.Text})
}

// spent is the refusal of a start past the message's budget.
func (s *sessionTools) spent(tool string) skills.Output {
	return skills.Failed(wire.ErrPermissionDenied, fmt.Sprintf(
		"%s: the sub-agents and sends of this message have started %d chats already (max_spawns_per_message); finish with what you have",
		tool, cmp.Or(s.n.cfg.Loop.MaxSpawnsPerMessage, DefaultMaxSpawnsPerMessage)))
}

func (s *sessionTools) spawn(ctx context.Context, c actors.Caller, a sessionArgs) skills.Output {
	if a.Task == "" {
		return skills.Failed(wire.ErrInvalidParams, "task: required")
	}
	if len(a.Tools) > maxSpawnTools {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("tools: at most %d names or patterns, not %d", maxSpawnTools, len(a.Tools)))
	}
	for _, p := range a.Tools {
		if len(p) > maxSpawnPattern {
			return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("tools: a name or pattern is at most %d bytes, not %d", maxSpawnPattern, len(p)))
		}
	}
	depth := c.Depth + 1
	if depth > s.maxDepth {
		return skills.Failed(wire.ErrPermissionDenied, fmt.Sprintf("sessions_spawn: depth %d would pass max_spawn_depth %d", depth, s.maxDepth))
	}
	s.mu.Lock()
	if s.children[c.ConversationID] >= s.maxChildren {
		s.mu.Unlock()
		return skills.Failed(wire.ErrPermissionDenied, fmt.Sprintf("sessions_spawn: this conversation already runs %d sub-agents (max_children)", s.maxChildren))
	}
	s.children[c.ConversationID]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.children[c.ConversationID]--; s.children[c.ConversationID] <= 0 {
			delete(s.children, c.ConversationID)
		}
	}()
	if !c.Spawns.Take() {
		return s.spent("sessions_spawn")
	}
	child := newConversationID("sub")
	if err := s.enter(c.ConversationID, child); err != nil {
		return skills.Failed(wire.ErrInternal, "sessions_spawn: "+err.Error())
	}
	defer s.leave(child)
	// The child may use what it is given, out of what the caller may use;
	// nothing when it is given nothing.
	var box actors.Toolbox = actors.Toolboxes{}
	if len(a.Tools) > 0 && c.Toolbox != nil {
		box = &actors.Filter{Box: c.Toolbox, Allow: a.Tools}
	}
	detail, err := json.Marshal(map[string]any{"parent": c.ConversationID, "child": child, "depth": depth,
		"tools": a.Tools, "max_iterations": a.MaxIterations})
	if err != nil {
		return skills.Failed(wire.ErrInternal, "encode event: "+err.Error())
	}
	if err := s.n.store.RecordEvent(ctx, persistence.Event{Node: s.n.cfg.NodeID, Kind: EventSessionSpawned, Detail: detail}); err != nil {
		// No sub-agent the audit cannot place in its tree.
		return skills.Failed(wire.ErrInternal, "audit session_spawned: "+err.Error())
	}
	// Cancelling the caller cancels ctx, and Converse cancels the child.
	ans, err := s.n.Converse(ctx, ChatInput{ConversationID: child, Text: a.Task, Toolbox: box, MaxIterations: a.MaxIterations,
		Parent: c.ConversationID, Depth: depth, Progress: c.Progress, Person: c.Person, Spawns: c.Spawns, Sampling: c.Sampling, fresh: true})
	if err != nil {
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("sub-agent %s: %v", child, err))
	}
	return result(map[string]any{"session_id": child, "answer": ans.Text, "iterations": ans.Iterations, "tool_calls": ans.ToolCalls})
}

// conversationExists reports whether conversation id has history: stored
// on this node or in the cluster's shared history, or held by a
// conversation actor of this node.
func (n *Node) conversationExists(ctx context.Context, id string) (bool, error) {
	msgs, err := n.store.RecentMessages(ctx, id, 1)
	if err != nil || len(msgs) > 0 {
		return len(msgs) > 0, err
	}
	if cn := n.cluster; cn != nil && cn.shared != nil {
		rows, err := cn.shared.RecentMessages(ctx, id, 1)
		if err != nil || len(rows) > 0 {
			return len(rows) > 0, err
		}
	}
	res, err := actors.Ask(n.system.Root, n.convs.PID, &actors.StateQuery{ConversationID: id}, 5*time.Second)
	if err != nil {
		return false, fmt.Errorf("ask conversation state: %w", err)
	}
	st, ok := res.(*actors.SessionState)
	return ok && st.Loaded, nil
}

// sessionBoxes appends the session tools and the question tool to boxes
// when they are on.
func (n *Node) sessionBoxes(boxes actors.Toolboxes) actors.Toolboxes {
	if n.cfg.Loop.SessionToolsOn() {
		boxes = append(boxes, newSessionTools(n))
	}
	if n.cfg.Loop.QuestionToolOn() {
		n.questions = newQuestions(n.cfg.Loop.QuestionTimeout.Duration)
		boxes = append(boxes, n.questions)
	}
	return boxes
}
