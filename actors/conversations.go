package actors

import (
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
		return &manager{o: &o, children: map[string]*actor.PID{}, forwarded: map[string]int{}}
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
}

func (m *manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *Chat:
		pid, ok := m.children[msg.ConversationID]
		if !ok {
			id := msg.ConversationID
			props := actor.PropsFromProducer(func() actor.Actor { return &conversation{id: id, o: m.o} }, onHot,
				actor.WithSupervisor(actor.NewOneForOneStrategy(m.o.CallRetries, m.o.CallRetryWindow,
					func(any) actor.Directive { return actor.RestartDirective })))
			var err error
			pid, err = ctx.SpawnNamed(props, safeName(ctx.Self().Id, "conv-"+id))
			if err != nil {
				ctx.Respond(&Answer{ConversationID: id, Err: fmt.Errorf("start conversation: %w", err)})
				return
			}
			m.children[id] = pid
			m.forwarded[id] = 0
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
			ctx.Forward(pid)
		}
	case *passivate:
		pid, ok := m.children[msg.id]
		if !ok || !pid.Equal(msg.pid) {
			return
		}
		if !msg.force && m.forwarded[msg.id] != msg.received {
			return // a chat crossed the request: the child stays
		}
		delete(m.children, msg.id)
		delete(m.forwarded, msg.id)
		ctx.Poison(pid)
	case *actor.Terminated:
		for k, pid := range m.children {
			if pid.Equal(msg.Who) {
				delete(m.children, k)
				delete(m.forwarded, k)
			}
		}
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
}
