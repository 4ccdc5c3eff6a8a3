package actors

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// Conversations is the handle of the conversation manager.
type Conversations struct {
	PID *actor.PID
	// o are the conversations' options, filled; RunOne runs with them.
	o *ConvOptions
}

// SpawnConversations starts the manager that owns one actor per
// conversation id.
func SpawnConversations(root *actor.RootContext, o ConvOptions) (*Conversations, error) {
	if o.Provider == nil || (o.Edges == nil && o.Toolbox == nil) {
		return nil, fmt.Errorf("spawn conversations: a provider and edges or a toolbox are required")
	}
	switch o.OnLimit {
	case "", OnLimitAnswer, OnLimitError:
	default:
		return nil, fmt.Errorf("spawn conversations: on_limit %q, want %q or %q", o.OnLimit, OnLimitAnswer, OnLimitError)
	}
	o.fill()
	props := actor.PropsFromProducer(func() actor.Actor {
		return &manager{o: &o, children: map[string]*actor.PID{}, forwarded: map[string]int{}, dormant: map[string]*dormantConv{},
			stopping: map[string]struct{}{}}
	}, onHot)
	name := o.Name
	if name == "" {
		name = "conversations"
	}
	pid, err := root.SpawnNamed(props, safeName("", name))
	if err != nil {
		return nil, fmt.Errorf("spawn conversations: %w", err)
	}
	return &Conversations{PID: pid, o: &o}, nil
}

type manager struct {
	o        *ConvOptions
	children map[string]*actor.PID
	// forwarded counts the chats sent to each child, so that an idle
	// child's request to stop is ignored when a chat is already on its way.
	forwarded map[string]int
	// dormant are the conversations without an actor whose history is
	// kept (dormant.go), at most o.MaxDormant of them and
	// o.MaxDormantBytes of history; sweepArmed tells whether a
	// sweepDormant is on its way.
	dormant    map[string]*dormantConv
	sweepArmed bool
	// dormantBytes is what the dormant conversations hold (historyBytes).
	dormantBytes int
	supervisor   actor.SupervisorStrategy
	// stopping are the ids of the actors the manager stopped whose
	// Terminated has not come yet.
	stopping map[string]struct{}
}

func (m *manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *Chat:
		pid, ok := m.children[msg.ConversationID]
		if !ok {
			var err error
			if pid, err = m.spawn(ctx, msg.ConversationID, msg.Fresh); err != nil {
				ctx.Respond(&Answer{ConversationID: msg.ConversationID, Err: fmt.Errorf("start conversation: %w", err)})
				return
			}
		}
		m.forwarded[msg.ConversationID]++
		ctx.Forward(pid)
	case *StateQuery:
		m.onStateQuery(ctx, msg)
	case *Cancel:
		if pid, ok := m.children[msg.ConversationID]; ok {
			ctx.Forward(pid)
		}
	case *Evict:
		if pid, ok := m.children[msg.ConversationID]; ok {
			// Counted like a chat: a request to go dormant that crossed it
			// is refused, so no memory of before the eviction is kept.
			m.forwarded[msg.ConversationID]++
			ctx.Forward(pid)
		}
		m.forgetDormant(msg.ConversationID)
	case sweepDormant:
		m.sweep(ctx)
	case *passivate:
		pid, ok := m.children[msg.id]
		if !ok || !pid.Equal(msg.pid) {
			return
		}
		if !msg.force && m.forwarded[msg.id] != msg.received {
			return // a chat crossed the request: the child stays
		}
		m.forget(msg.id)
		if msg.keep != nil {
			m.keepDormant(ctx, msg.id, msg.keep)
		}
		m.stopping[pid.Id] = struct{}{}
		ctx.Poison(pid)
	case *actor.Terminated:
		releaseRemovedChild(ctx)
		if _, ok := m.stopping[msg.Who.Id]; ok {
			// An actor the manager stopped: its conversation may have a
			// new actor already, under another name.
			delete(m.stopping, msg.Who.Id)
			if len(m.stopping) == 0 {
				m.stopping = map[string]struct{}{}
			}
			return
		}
		for k, pid := range m.children {
			if pid.Equal(msg.Who) {
				m.forget(k)
			}
		}
	}
}

// spawn starts the actor of conversation id, with its dormant state if
// the manager kept one, or with no history if the id is fresh (Chat.Fresh).
func (m *manager) spawn(ctx actor.Context, id string, fresh bool) (*actor.PID, error) {
	d := m.dormant[id]
	if d == nil && fresh {
		d = &dormantConv{} // nothing stored: woken with an empty history
	}
	received := new(int) // counted across restarts (conversation.received)
	props := actor.PropsFromProducer(func() actor.Actor {
		// A restarted actor reads the store: what it was given is only
		// for its first incarnation.
		c := &conversation{id: id, o: m.o, woken: d, received: received}
		d = nil
		if m.o.started != nil {
			m.o.started(c)
		}
		return c
	}, onHot, actor.WithSupervisor(m.strategy()))
	// The actor of the conversation's last incarnation may not have
	// stopped yet (it went dormant or passivated a moment ago): the new
	// one takes another name.
	var pid *actor.PID
	err := actor.ErrNameExists
	for n := 0; errors.Is(err, actor.ErrNameExists) && n <= 8; n++ {
		name := "conv-" + id
		if n > 0 {
			name = fmt.Sprintf("conv-%s@%d", id, n)
		}
		name = safeName(ctx.Self().Id, name)
		if _, busy := m.stopping[ctx.Self().Id+"/"+name]; busy {
			continue
		}
		pid, err = ctx.SpawnNamed(props, name)
	}
	if err != nil {
		return nil, err
	}
	m.forgetDormant(id)
	m.children[id] = pid
	m.forwarded[id] = 0
	return pid, nil
}

// strategy is the conversations' supervisor strategy for their tool-call
// actors, made once.
func (m *manager) strategy() actor.SupervisorStrategy {
	if m.supervisor == nil {
		m.supervisor = actor.NewOneForOneStrategy(m.o.CallRetries, m.o.CallRetryWindow,
			func(any) actor.Directive { return actor.RestartDirective })
	}
	return m.supervisor
}

// forget drops conversation id's actor from the maps, and the maps a
// burst grew once they are empty (Go's maps never shrink).
func (m *manager) forget(id string) {
	delete(m.children, id)
	delete(m.forwarded, id)
	if len(m.children) == 0 {
		m.children, m.forwarded = map[string]*actor.PID{}, map[string]int{}
	}
}

// Evict asks the actor of a conversation to stop once it is idle, so that
// its next chat loads the history afresh: a clustered node sends it when
// another node took the conversation over and may have added to it.
type Evict struct {
	ConversationID string
}

// passivate is a conversation asking its manager to stop it: when idle
// (honoured only if received equals the chats forwarded to it), or when
// broken (force).
type passivate struct {
	id       string
	pid      *actor.PID
	received int
	force    bool
	// keep, when set, is the conversation's dormant state.
	keep *dormantConv
}

// releaseRemovedChild drops the reference protoactor's set of children
// keeps to the child it has just removed (call it on a Terminated).
// PIDSet.Remove moves the last PID into the hole and shortens the slice by
// one, leaving the slot past the end pointing at the PID it moved or
// removed; a PID caches its process, so that slot kept a stopped actor
// reachable with everything it held: the manager's kept the actor of a
// conversation (its history, mailbox and last tool call) for every
// conversation it ever had, up to the most children it had at once. The
// slot is past the slice's length, where the set never reads before it
// writes, so clearing it changes nothing the set sees.
func releaseRemovedChild(ctx actor.Context) {
	kids := ctx.Children()
	if n := len(kids); cap(kids) > n {
		kids[:n+1][n] = nil
	}
}
