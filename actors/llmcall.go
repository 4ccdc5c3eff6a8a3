package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/actors/loop"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
)

// callLLM asks the model over the history, off the mailbox; the answer
// comes back as llmDone. Nothing is stored first: a completion is no
// acknowledgement to anyone, so what the chat added so far is made durable
// by the write that precedes the next tool dispatch, or by the answer's
// (see dispatchAfterStore and end).
func (c *conversation) callLLM(ctx actor.Context, e loop.AskModel) {
	c.seq++
	t := c.cur
	t.seq = c.seq
	// The oldest exchanges leave memory and the request once the history
	// passes its bound; the store keeps them.
	c.history = Window(c.history, c.o.MaxHistoryBytes)
	req := llm.Request{Model: c.o.Model, System: t.system, MaxTokens: t.maxTokens, Sampling: t.chat.Sampling,
		Messages: append([]llm.Message(nil), c.history...)}
	if e.Tools {
		t.names, req.Tools = c.o.offers.of(t.toolbox)
	} else {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf(
			"[evoclaw] Stop using tools: %v. Answer the user now from the results above, and say what could not be done.", e.Limit)})
	}
	lctx, cancel := context.WithTimeout(context.Background(), c.o.LLMTimeout)
	t.cancel = cancel
	self, root, seq, p, metrics := ctx.Self(), ctx.ActorSystem().Root, c.seq, c.o.Provider, c.o.Metrics
	record := c.llmRecorder(t.m.Iterations())
	progress, iteration, convID, now := t.progress, t.m.Iterations(), c.id, c.o.Now
	progress.emit(Progress{Kind: ProgressLLMStart, ConversationID: convID, Time: now(), Iteration: iteration})
	hot.Go(func() {
		defer cancel()
		began := time.Now()
		resp, err := p.Complete(lctx, req)
		boundAnswer(&resp)
		timedOut := errors.Is(lctx.Err(), context.DeadlineExceeded) && err != nil
		if timedOut {
			err = fmt.Errorf("llm %s: no answer within %s: %w", p.Name(), c.o.LLMTimeout, err)
		}
		metrics.llm(err)
		took := time.Since(began)
		record(resp, err, timedOut, took)
		end := Progress{Kind: ProgressLLMEnd, ConversationID: convID, Time: now(), Iteration: iteration,
			Status: wire.StatusSuccess, ElapsedMS: took.Milliseconds()}
		if err != nil {
			end.Status, end.Error = wire.StatusError, truncate(err.Error(), summaryBytes)
			end.ErrorType = llmErrorType(err, timedOut)
		} else if len(resp.Message.ToolCalls) > 0 {
			end.Text = truncate(strings.TrimSpace(resp.Message.Content), MaxProgressText)
		}
		progress.emit(end)
		root.Send(self, &llmDone{seq: seq, resp: resp, err: err})
	})
}

// llmRecorder returns the function that audits one completion of turn
// iteration (no-op without an LLMLog).
func (c *conversation) llmRecorder(iteration int) func(resp llm.Response, err error, timedOut bool, took time.Duration) {
	if c.o.LLMLog == nil {
		return func(llm.Response, error, bool, time.Duration) {}
	}
	o, id := c.o, c.id
	write := func(rec persistence.LLMCall) {
		if q, ok := o.LLMLog.(LLMCallQueue); ok {
			// Off the chat's path: the history write before the next
			// tool dispatch, or at the end of the chat, commits it too.
			if aerr := q.QueueLLMCall(rec, func(err error) {
				if err != nil {
					o.Logger.Error("audit llm call", "conversation", id, "err", err)
				}
			}); aerr != nil {
				o.Logger.Error("audit llm call", "conversation", id, "err", aerr)
			}
			return
		}
		actx, cancel := context.WithTimeout(context.Background(), o.AuditTimeout)
		defer cancel()
		if aerr := o.LLMLog.RecordLLMCall(actx, rec); aerr != nil {
			o.Logger.Error("audit llm call", "conversation", id, "err", aerr)
		}
	}
	return func(resp llm.Response, err error, timedOut bool, took time.Duration) {
		// The exchanges a retry or a fallback answered after: a row each,
		// so that the trail says which model failed before which answered.
		// The answer's row keeps the rest of the call's time (its exchange,
		// waits and backoffs): the rows of a call still sum to it.
		for _, f := range resp.Failed {
			took -= f.Latency
			write(persistence.LLMCall{Time: f.End.UTC(), Node: o.Node, ConversationID: id, Provider: f.Provider,
				Model: cmp.Or(f.Model, o.Model), LatencyMs: f.Latency.Milliseconds(), Status: persistence.StatusError,
				ErrorType: string(f.Kind), Error: truncate(f.Error, 1024), Iteration: iteration})
		}
		rec := persistence.LLMCall{Time: o.Now().UTC(), Node: o.Node, ConversationID: id, Provider: cmp.Or(resp.Provider, o.Provider.Name()),
			Model: cmp.Or(resp.Model, o.Model), InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
			LatencyMs: max(took, 0).Milliseconds(), Status: persistence.StatusSuccess, Iteration: iteration}
		if err != nil {
			rec.Status, rec.Error, rec.ErrorType = persistence.StatusError, truncate(err.Error(), 1024), llmErrorType(err, timedOut)
		}
		write(rec)
	}
}

// LLMCallQueue is an LLMCallLog that can queue a record and return before
// it commits, with every write submitted to the same store afterwards
// committing no earlier than the record (sqlite.Store is one). A
// conversation whose LLMLog is one, and is also its HistoryStore's store,
// queues the record of each completion instead of waiting for it: the
// history write that precedes the next tool dispatch, or ends the chat,
// commits it at the latest, so a record is never missing for a step the
// history holds, and the chat does not wait for one commit per completion.
type LLMCallQueue interface {
	persistence.LLMCallLog
	// QueueLLMCall queues c; then, which may be nil, gets the commit's
	// result on the store's writer and must be quick. The error is for a
	// record that could not be queued.
	QueueLLMCall(c persistence.LLMCall, then func(error)) error
}

// storeFunc takes the messages not yet stored and returns the function
// that stores them (no-op without a HistoryStore). The writes of one
// conversation run off the mailbox, one goroutine each, so each waits for
// the one before it: the stored order is the order of the history, and a
// write never lands after a failed one (it fails too).
func (c *conversation) storeFunc(t *turn) func(context.Context) error {
	msgs := t.unpersist
	t.unpersist = nil
	prev, link := c.lastStore, &storeLink{done: make(chan struct{})}
	c.lastStore = link
	h, id := c.o.History, c.id
	return func(ctx context.Context) (err error) {
		defer func() { link.err = err; close(link.done) }()
		if prev != nil {
			select {
			case <-prev.done:
			case <-ctx.Done():
				return fmt.Errorf("%w: store %d messages of %s after the write before them: %w", ErrHistory, len(msgs), id, ctx.Err())
			}
			if prev.err != nil {
				return fmt.Errorf("%w: the write before failed: %w", ErrHistory, prev.err)
			}
		}
		if h == nil || len(msgs) == 0 {
			return nil
		}
		if err := h.AppendHistory(ctx, id, msgs); err != nil {
			return fmt.Errorf("%w: store %d messages of %s: %w", ErrHistory, len(msgs), id, err)
		}
		return nil
	}
}

// storeLink is one history write of a conversation: done closes when it
// has ended, with err its outcome.
type storeLink struct {
	done chan struct{}
	err  error
}

// takeAudits returns the queued audit results of t and forgets them.
func (t *turn) takeAudits() []<-chan error {
	a := t.audits
	t.audits = nil
	return a
}

// awaitAudits waits for the queued audit writes and returns the first
// error. They were queued before the history write that precedes this
// wait, so by then they are answered; ctx bounds the wait all the same.
// It runs before a tool dispatch and before the answer: nothing more runs,
// and nobody hears anything, before every call so far is on record.
func awaitAudits(ctx context.Context, audits []<-chan error) error {
	var first error
	for _, ch := range audits {
		select {
		case err := <-ch:
			if err != nil && first == nil {
				first = err
			}
		case <-ctx.Done():
			return fmt.Errorf("wait for the audit of a tool call: %w", ctx.Err())
		}
	}
	return first
}
