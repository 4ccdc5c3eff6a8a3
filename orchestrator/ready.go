package orchestrator

import (
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Readiness thresholds.
const (
	// MinAuditFreeBytes is the free space the audit database's file system
	// must keep: below it the node is not ready and refuses chats, before
	// a write fails half-way through a chat.
	MinAuditFreeBytes = 16 << 20
	// auditRetryAfter is how long chats are refused after an audit write
	// failed; then one is let through, and its writes tell whether the
	// store works again (nothing is written just to find out).
	auditRetryAfter = 5 * time.Second
)

// Readiness check names.
const (
	CheckAudit  = "audit"
	CheckBroker = "broker"
	CheckLLM    = "llm"
	// CheckCluster is present only on a node with [cluster].
	CheckCluster = "cluster"
)

// ErrNotReady refuses a chat the node cannot serve now (see Node.Ready).
var ErrNotReady = errors.New("node not ready")

// ReadyCheck is one condition of readiness.
type ReadyCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

// Readiness is what GET /readyz answers.
type Readiness struct {
	Ready  bool         `json:"ready"`
	Checks []ReadyCheck `json:"checks"`
}

// Ready tells whether the node can answer chats now: its audit trail can
// write, its MQTT session to the agents is up, it has a language model
// configured, and at least one LLM link is neither cooling down nor
// reported not answering by its server's background check. It reads state
// the node already has (plus one statfs); it writes nothing.
func (n *Node) Ready() Readiness {
	checks := []ReadyCheck{n.auditCheck(), n.brokerCheck(), n.llmCheck()}
	if n.cluster != nil {
		checks = append(checks, n.clusterCheck())
	}
	r := Readiness{Ready: true, Checks: checks}
	for _, c := range checks {
		r.Ready = r.Ready && c.OK
	}
	return r
}

func (n *Node) auditCheck() ReadyCheck {
	free, ferr := n.diskFree(n.cfg.DataDir)
	ok, reason := auditReady(n.store.WriteHealth(), free, ferr, n.now())
	return ReadyCheck{Name: CheckAudit, OK: ok, Reason: reason}
}

// auditReady is the audit check from what the writer last saw (h) and the
// data directory's free bytes (free, or ferr when statfs failed) at now.
// A failed write keeps the node not ready until a write succeeds, except
// one that failed for a full disk: once auditRetryAfter has passed, as
// for the chat gate, and the disk has room again, the cause is gone and
// the check passes without a write. Without that, an idle node stays not ready
// however much space returns, until a chat comes: behind a load balancer
// that sends chats only to ready nodes, none comes.
func auditReady(h sqlite.WriteHealth, free uint64, ferr error, now time.Time) (bool, string) {
	room := ferr == nil && free >= MinAuditFreeBytes
	if h.Failing() && !(h.DiskFull && room && now.Sub(h.LastFailure) >= auditRetryAfter) {
		return false, fmt.Sprintf("last audit write failed at %s: %s", h.LastFailure.UTC().Format(time.RFC3339), h.LastError)
	}
	if ferr == nil && !room {
		return false, fmt.Sprintf("disk nearly full: %d bytes free for the audit trail, need %d", free, MinAuditFreeBytes)
	}
	return true, ""
}

func (n *Node) brokerCheck() ReadyCheck {
	c := ReadyCheck{Name: CheckBroker, OK: n.client != nil && n.client.Connected()}
	if !c.OK {
		c.Reason = "the MQTT session to " + n.BrokerURL() + " is not connected: edge agents cannot be reached"
	}
	return c
}

// clusterCheck: a clustered node is ready when the membership lists it,
// that is when the others can route conversations to it and it to them.
// While etcd is out of reach the list ages out and the node says so.
func (n *Node) clusterCheck() ReadyCheck {
	c := ReadyCheck{Name: CheckCluster}
	if n.cluster.c == nil {
		c.Reason = "the cluster membership has not started"
		return c
	}
	st := n.cluster.c.Status()
	for _, m := range st.Members {
		if m.Self {
			c.OK = true
			return c
		}
	}
	c.Reason = fmt.Sprintf("this node is not (or no longer) a member of cluster %q as its membership (etcd) sees it; %d other members listed", st.Name, len(st.Members))
	return c
}

func (n *Node) llmCheck() ReadyCheck {
	c := ReadyCheck{Name: CheckLLM, OK: true}
	if n.noModel() {
		c.OK, c.Reason = false, "no language model is configured: every chat is refused (HTTP 503, code "+CodeModelNotConfigured+
			"); configure [llm] in evoclaw.toml and restart the node (docs/LLM.md)"
		return c
	}
	links := n.llmHealth()
	if len(links) == 0 {
		return c
	}
	var soonest time.Time
	down := 0
	for _, h := range links {
		switch {
		case !h.CoolingUntil.IsZero():
			if soonest.IsZero() || h.CoolingUntil.Before(soonest) {
				soonest = h.CoolingUntil
			}
		case !h.NotAnsweringSince.IsZero():
			down++
		default:
			return c
		}
	}
	c.OK = false
	if down == 0 {
		c.Reason = fmt.Sprintf("every LLM link is cooling down after failures (the first until %s); chats still try them",
			soonest.UTC().Format(time.RFC3339))
		return c
	}
	h := links[0]
	for _, l := range links {
		if !l.NotAnsweringSince.IsZero() {
			h = l
			break
		}
	}
	c.Reason = fmt.Sprintf("no LLM link can answer now: the server of %s %s is not answering since %s: %s (checked %s; checked again in the background, and chats still try it)",
		h.Provider, h.Model, h.NotAnsweringSince.UTC().Format(time.RFC3339), h.NotAnswering, h.CheckedAt.UTC().Format(time.RFC3339))
	if down > 1 || len(links) > down {
		c.Reason = fmt.Sprintf("no LLM link can answer now: %d not answering (the first, %s %s, since %s: %s), %d cooling down; chats still try them",
			down, h.Provider, h.Model, h.NotAnsweringSince.UTC().Format(time.RFC3339), h.NotAnswering, len(links)-down)
	}
	return c
}

// llmHealth reports the provider chain's links; nil when the provider has
// no links (the scripted player, an injected provider).
func (n *Node) llmHealth() []resilient.Health {
	if hp, ok := n.provider.(interface{ Health() []resilient.Health }); ok {
		return hp.Health()
	}
	return nil
}

// noModel reports whether the node has no language model configured (its
// provider is scripted.Offline, which refuses every call).
func (n *Node) noModel() bool {
	_, ok := n.provider.(scripted.Offline)
	return ok
}

// modelGate refuses a chat at once, before it starts, on a node with no
// language model: with scripted.NoModel's error (llm.KindNotConfigured),
// which names the tools the node offers now. Nothing of the chat is run or
// recorded, as for the other refusals before a chat starts (auditGate, a
// full set of chat slots).
func (n *Node) modelGate() error {
	if !n.noModel() {
		return nil
	}
	var defs []llm.ToolDef
	if n.toolbox != nil {
		defs = n.toolbox.Defs()
	}
	return scripted.NoModel(defs)
}

// llmGate refuses a chat fast when the model's queue is full: the chat
// would fail overloaded at its first call, after its message and the
// failed call were written to the audit trail. Refused at every chat
// endpoint at the speed of HTTP, each such chat wrote about 1 KB to the
// audit database and two log lines: a client retrying in a loop wrote 20
// MB and 9 MB of log in 10 s.
func (n *Node) llmGate() error {
	sp, ok := n.provider.(interface{ Saturated() bool })
	if !ok || !sp.Saturated() {
		return nil
	}
	return &llm.Error{Kind: llm.KindOverloaded, Provider: n.provider.Name(),
		Message: "every model's queue of calls is full ([llm] max_queued); the chat did not start"}
}

// auditGate refuses a chat fast when the audit trail cannot record it: the
// disk is nearly full, a write failed less than auditRetryAfter ago, or
// one failed because the card turned read-only and it still is. Such a
// card stays so until it is checked and mounted again: a chat let through
// after auditRetryAfter ran its tool calls on the agents, then could not
// be recorded.
func (n *Node) auditGate() error {
	h := n.store.WriteHealth()
	if h.Failing() && (n.now().Sub(h.LastFailure) < auditRetryAfter || n.store.StillReadOnly()) {
		return fmt.Errorf("%w: the audit trail cannot write (%s)", ErrNotReady, h.LastError)
	}
	if free, err := n.diskFree(n.cfg.DataDir); err == nil && free < MinAuditFreeBytes {
		return fmt.Errorf("%w: disk nearly full (%d bytes free for the audit trail, need %d)", ErrNotReady, free, MinAuditFreeBytes)
	}
	return nil
}

// statfsFree returns the bytes an unprivileged writer may still use on the
// file system holding path.
func statfsFree(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil //nolint:unconvert // field types differ by platform
}

// handleReady serves GET /readyz: 200 when ready, else 503; no token.
func (n *Node) handleReady(w http.ResponseWriter, _ *http.Request) {
	r := n.Ready()
	code := http.StatusOK
	if !r.Ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, r)
}
