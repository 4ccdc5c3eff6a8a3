package approvals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Defaults of Config.
const (
	DefaultTimeout    = 5 * time.Minute
	DefaultMaxPending = 64
	// MaxPendingLimit bounds Config.MaxPending.
	MaxPendingLimit = 4096
	// storeTimeout bounds one write of the queue.
	storeTimeout = 10 * time.Second
	// publishTimeout bounds one MQTT publish of the queue.
	publishTimeout = 5 * time.Second
	// MaxParamsBytes bounds the arguments of a call that can be put to a
	// person: they are kept, shown and published whole, so that what a
	// person approves is what runs. A call with longer arguments is
	// refused without asking (ErrParamsTooLong).
	MaxParamsBytes = 64 << 10
)

// ErrParamsTooLong refuses the approval of a call whose arguments are
// longer than MaxParamsBytes. They used to be cut at 4 KiB: a model could
// pad its arguments and put what mattered past the cut, where the person
// asked to decide never saw it.
var ErrParamsTooLong = errors.New("arguments too long to put to a person")

// Who decides when no person does.
const (
	ByTimeout  = "timeout"
	ByRestart  = "restart"
	ByCanceled = "canceled"
)

// NodeDecides reports whether by is one of the names the node decides
// under (ByTimeout, ByRestart, ByCanceled). A person may not decide under
// them: the trail would show the node's own decision ("denied by
// restart") where a person's was made.
func NodeDecides(by string) bool {
	return by == ByTimeout || by == ByRestart || by == ByCanceled
}

// TopicPrefix is where pending approvals are published, retained, one
// topic per approval (evoclaw/approvals/{id}); a decision clears it.
const TopicPrefix = "evoclaw/approvals/"

// Errors of the gate.
var (
	// ErrNoDecider refuses a decision that names no one.
	ErrNoDecider = errors.New("a decision must name who decided")
	// ErrNodeDecider refuses a person's decision under a name the node
	// decides under (NodeDecides).
	ErrNodeDecider = errors.New("a decision by timeout, restart or canceled is the node's own; name who decides")
)

// Config is the [approvals] section of evoclaw.toml. The zero value gates
// nothing.
type Config struct {
	// Timeout is how long a call waits for a decision; then it is denied
	// (default 5 min). It must be shorter than [loop] chat_timeout.
	Timeout llm.Duration `toml:"timeout"`
	// MaxPending bounds the pending approvals (default 64); a call beyond
	// it is refused at once, not queued.
	MaxPending int    `toml:"max_pending"`
	Rules      []Rule `toml:"rules"`
}

// Validate checks the rules and fills defaults.
func (c *Config) Validate() error {
	var errs []error
	for i, r := range c.Rules {
		if err := r.validate(); err != nil {
			errs = append(errs, fmt.Errorf("approvals.rules[%d]: %w", i, err))
		}
	}
	if c.Timeout.Duration < 0 || c.MaxPending < 0 || c.MaxPending > MaxPendingLimit {
		errs = append(errs, fmt.Errorf("approvals: timeout must not be negative, max_pending between 0 and %d", MaxPendingLimit))
	}
	if c.Timeout.Duration == 0 {
		c.Timeout.Duration = DefaultTimeout
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	return errors.Join(errs...)
}

// Store is the durable queue (persistence/sqlite).
type Store interface {
	CreateApproval(ctx context.Context, a persistence.Approval, maxPending int) error
	DecideApproval(ctx context.Context, id, state, by, note, node string, at time.Time) (persistence.Approval, error)
	Approvals(ctx context.Context, state string, limit int) ([]persistence.Approval, error)
	Approval(ctx context.Context, id string) (persistence.Approval, error)
}

// Options configure a Gate. Store is required.
type Options struct {
	Store Store
	Node  string
	// Now is the clock of requests and expiry; nil means time.Now.
	Now func() time.Time
	// Tools lists an agent's tools and whether they are listed, for
	// edge_call queries; nil means no agent has any.
	Tools func(agentID string) (tools []wire.ToolInfo, listed bool)
	// Publish, when set, sends a retained MQTT message: the pending
	// approval as JSON, or an empty payload when it is decided.
	Publish func(ctx context.Context, topic string, payload []byte) error
	Logger  *slog.Logger
}

// Gate is the node's approval gate (actors.Approver).
type Gate struct {
	cfg Config
	o   Options
	log *slog.Logger

	mu      sync.Mutex // guards waiters and next
	waiters map[string]chan actors.ApprovalDecision
	// next is when Sweep must next read the store: the earliest expiry of
	// the approvals pending at its last read, or of one requested since.
	// Zero reads at once (a node that starts reads once); an idle node
	// with nothing pending reads nothing.
	next time.Time
}

var _ actors.Approver = (*Gate)(nil)

// New returns a gate for cfg (validated).
func New(cfg Config, o Options) (*Gate, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Store == nil {
		return nil, errors.New("new approval gate: a store is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Gate{cfg: cfg, o: o, log: o.Logger, waiters: map[string]chan actors.ApprovalDecision{}}, nil
}

// Enabled reports whether any rule gates calls.
func (g *Gate) Enabled() bool { return len(g.cfg.Rules) > 0 }

// Open denies every approval a previous process left pending (by
// "restart"): the chat that waited is gone with that process, and running
// the call later, with nobody waiting for its result, is what approval is
// there to prevent.
func (g *Gate) Open(ctx context.Context) error {
	left, err := g.o.Store.Approvals(ctx, persistence.ApprovalPending, 0)
	if err != nil {
		return fmt.Errorf("open approval gate: %w", err)
	}
	for _, a := range left {
		if _, err := g.decide(ctx, a.ID, persistence.ApprovalDenied, ByRestart,
			"the node restarted while the call waited; its chat ended, so the call was not run", g.o.Now()); err != nil {
			return fmt.Errorf("open approval gate: %w", err)
		}
	}
	return nil
}

// Gate implements actors.Approver.
func (g *Gate) Gate(t actors.Target, _ string) string {
	if len(g.cfg.Rules) == 0 {
		return ""
	}
	var (
		tools  []wire.ToolInfo
		listed = true
	)
	if t.Prompt != nil && g.o.Tools != nil {
		tools, listed = g.o.Tools(t.AgentID)
	}
	return gate(g.cfg.Rules, t, tools, listed)
}

// Await implements actors.Approver.
func (g *Gate) Await(ctx context.Context, req actors.ApprovalRequest, pending func(id string)) actors.ApprovalDecision {
	id, err := newID()
	if err != nil {
		return actors.ApprovalDecision{Err: err}
	}
	if len(req.Args) > MaxParamsBytes {
		return actors.ApprovalDecision{Err: fmt.Errorf("%w: %d bytes, at most %d can be shown whole; ask for less in one call",
			ErrParamsTooLong, len(req.Args), MaxParamsBytes)}
	}
	now := g.o.Now()
	tool := req.Tool
	if req.AgentID != "" && !req.Prompt {
		tool = req.AgentID + actors.ToolSep + req.Tool
	}
	a := persistence.Approval{ID: id, State: persistence.ApprovalPending, ConversationID: req.ConversationID, RequestID: req.RequestID,
		AgentID: req.AgentID, Tool: tool, Params: string(req.Args), Reason: req.Reason,
		Requested: now, Expires: now.Add(g.cfg.Timeout.Duration), Node: g.o.Node}
	w := make(chan actors.ApprovalDecision, 1)
	g.mu.Lock()
	g.waiters[id] = w
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.waiters, id)
		g.mu.Unlock()
	}()
	sctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	err = g.o.Store.CreateApproval(sctx, a, g.cfg.MaxPending)
	cancel()
	if err != nil {
		g.log.Warn("approval not queued; the call is refused", "tool", tool, "err", err)
		return actors.ApprovalDecision{Err: err}
	}
	// Only once it is stored: a sweep that reads before this point and
	// misses it has already been told to read again by then.
	g.lowerNext(a.Expires)
	g.publish(id, a)
	if pending != nil {
		pending(id)
	}
	select {
	case d := <-w:
		return d
	case <-ctx.Done():
	}
	// The chat ended first: the approval is decided as canceled, unless a
	// decision won the race, which is then what the store says.
	sctx, cancel = context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	d, err := g.decide(sctx, id, persistence.ApprovalCanceled, ByCanceled, "the chat ended before a decision", g.o.Now())
	if err != nil {
		select {
		case d := <-w:
			d.Approved = false // nobody waits for the result any more: it is not run
			return d
		default:
		}
		return actors.ApprovalDecision{ID: id, State: persistence.ApprovalCanceled, By: ByCanceled, Err: err}
	}
	return d
}

// Decide approves or denies pending approval id, naming by; the waiting
// call runs or gets the denial at once.
func (g *Gate) Decide(ctx context.Context, id string, approve bool, by, note string) (persistence.Approval, error) {
	if by == "" {
		return persistence.Approval{}, ErrNoDecider
	}
	if NodeDecides(by) {
		// The API refuses it first; this is a peer node's forwarded
		// decision, which an older release did not check.
		return persistence.Approval{}, ErrNodeDecider
	}
	state := persistence.ApprovalDenied
	if approve {
		state = persistence.ApprovalApproved
	}
	now := g.o.Now()
	// An approval past its expiry is the sweep's, which runs only every
	// second: it times out here first, so the store refuses this decision
	// as made already. A person's late "approve" never runs the call.
	if a, err := g.o.Store.Approval(ctx, id); err == nil && a.State == persistence.ApprovalPending && !now.Before(a.Expires) {
		if _, err := g.timeOut(ctx, a, now); err != nil {
			g.log.Warn("time out an expired approval before a late decision", "approval", id, "err", err)
		}
	}
	d, err := g.decide(ctx, id, state, by, note, now)
	if err != nil {
		return persistence.Approval{}, err
	}
	return g.o.Store.Approval(ctx, d.ID)
}

// Sweep denies, as timed out, every pending approval whose time is up.
// The node calls it every second; tests call it after moving the clock.
func (g *Gate) Sweep(ctx context.Context) error {
	now := g.o.Now()
	g.mu.Lock()
	due := !now.Before(g.next)
	if due {
		g.next = never // an approval requested during the read lowers it
	}
	g.mu.Unlock()
	if !due {
		return nil
	}
	pending, err := g.o.Store.Approvals(ctx, persistence.ApprovalPending, 0)
	if err != nil {
		g.lowerNext(now) // read again next time
		return fmt.Errorf("sweep approvals: %w", err)
	}
	var errs []error
	for _, a := range pending {
		if now.Before(a.Expires) {
			g.lowerNext(a.Expires)
			continue
		}
		if _, err := g.timeOut(ctx, a, now); err != nil {
			// Not recorded (a full disk): its call still waits, so the
			// next sweep tries again. Nothing else would: the approval
			// stayed pending past its expiry, and its chat waited for
			// [loop] chat_timeout, unless a later approval's expiry
			// made a sweep read the store again.
			g.lowerNext(now)
			errs = append(errs, err)
			if errors.Is(err, sqlite.ErrReadOnlyFS) {
				g.denyUnrecorded(a, err)
			}
		}
	}
	return errors.Join(errs...)
}

// denyUnrecorded hands the call waiting for expired approval a the
// timeout the store could not record because its card turned read-only:
// no write succeeds until the card is checked and the node restarted,
// whose Open then denies the approval (by "restart"). Waiting for the
// record held the chat until [loop] chat_timeout (504 after 10 min by
// default), though it could end at once: the call is not run either way.
func (g *Gate) denyUnrecorded(a persistence.Approval, err error) {
	g.mu.Lock()
	w := g.waiters[a.ID]
	g.mu.Unlock()
	if w == nil {
		return
	}
	d := actors.ApprovalDecision{ID: a.ID, State: persistence.ApprovalTimedOut, By: ByTimeout,
		Note: fmt.Sprintf("nobody decided within %s; the timeout could not be recorded: %v", a.Expires.Sub(a.Requested).Round(time.Second), err)}
	select {
	case w <- d:
		g.log.Warn("approval timed out, not recorded: the audit database's card is read-only", "approval", a.ID, "tool", a.Tool)
	default: // handed already
	}
}

// timeOut denies pending approval a, expired at now, as timed out.
func (g *Gate) timeOut(ctx context.Context, a persistence.Approval, now time.Time) (actors.ApprovalDecision, error) {
	return g.decide(ctx, a.ID, persistence.ApprovalTimedOut, ByTimeout,
		fmt.Sprintf("nobody decided within %s", a.Expires.Sub(a.Requested).Round(time.Second)), now)
}

// never is a time no approval expires at.
var never = time.Unix(1<<62, 0)

// lowerNext makes Sweep read the store again at t at the latest.
func (g *Gate) lowerNext(t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.Before(g.next) {
		g.next = t
	}
}

// List returns approvals in state (all when empty), newest first.
func (g *Gate) List(ctx context.Context, state string, limit int) ([]persistence.Approval, error) {
	return g.o.Store.Approvals(ctx, state, limit)
}

// Get returns approval id.
func (g *Gate) Get(ctx context.Context, id string) (persistence.Approval, error) {
	return g.o.Store.Approval(ctx, id)
}

// decide stores the decision made at at, wakes the waiting call and
// clears the retained topic.
func (g *Gate) decide(ctx context.Context, id, state, by, note string, at time.Time) (actors.ApprovalDecision, error) {
	a, err := g.o.Store.DecideApproval(ctx, id, state, by, note, g.o.Node, at)
	if err != nil {
		return actors.ApprovalDecision{}, err
	}
	d := actors.ApprovalDecision{Approved: state == persistence.ApprovalApproved, ID: id, State: state, By: by, Note: note}
	g.mu.Lock()
	w := g.waiters[id]
	g.mu.Unlock()
	if w != nil {
		select {
		case w <- d:
		default: // decided once: the store refuses a second decision
		}
	}
	g.publish(id, a)
	g.log.Info("approval decided", "approval", id, "tool", a.Tool, "state", state, "by", by)
	return d, nil
}

// publish shows a pending approval on its retained topic, or clears it.
func (g *Gate) publish(id string, a persistence.Approval) {
	if g.o.Publish == nil {
		return
	}
	var payload []byte
	if a.State == persistence.ApprovalPending {
		payload, _ = json.Marshal(a) // plain fields: cannot fail
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if err := g.o.Publish(ctx, TopicPrefix+id, payload); err != nil {
		// The queue is in SQLite and the API; MQTT is a view of it.
		g.log.Warn("publish approval", "approval", id, "err", err)
	}
}

// ValidID reports whether id has the shape newID gives every approval:
// "apr-" and 16 lowercase hex digits. Another id names no approval on any
// node.
func ValidID(id string) bool {
	return len(id) == len(idPrefix)+16 && strings.HasPrefix(id, idPrefix) && lowerHex(id[len(idPrefix):])
}

// lowerHex reports whether s is lowercase hex digits only.
func lowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// idPrefix starts every approval id.
const idPrefix = "apr-"

// newID returns "apr-" and 16 random hex digits.
func newID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("approval id: %w", err)
	}
	return idPrefix + hex.EncodeToString(b), nil
}
