package orchestrator

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/boundlog"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// clusterNode is what a clustered node adds to a node alone.
type clusterNode struct {
	c *cluster.Cluster // nil until startCluster
	// shared is the cluster's conversation histories; nil without
	// [cluster] state_url.
	shared *cluster.SharedHistory
	chat   clusterChat
	// forwarded counts the chats this node sent to another node.
	forwarded atomic.Int64
	// reports count the agents' reports routed (cluster.ReportCounts).
	fromBroker, toOwner, toAll, relayedIn, noOwner atomic.Int64
	// apiForwarded counts the answers and decisions this node's API took
	// for another node's questions and approvals.
	apiForwarded atomic.Int64
	// askLog bounds the lines logged for other nodes that did not answer
	// about a question or an approval: a client can ask about as many as
	// it likes.
	askLog *boundlog.Limiter
	// router places this node's calls at their agents' grains
	// (cluster_agents.go); replaced counts the calls it placed again
	// because their agent moved to another node.
	router   *actor.PID
	replaced atomic.Int64
	// pruneStop ends the loop that deletes the shared histories' old
	// conversations; pruneDone is closed when it has. Nil without
	// [cluster] history_max_age.
	pruneStop context.CancelFunc
	pruneDone chan struct{}
}

// clusterStatus is the membership this node sees and the reports it
// routed.
func (n *Node) clusterStatus() cluster.Status {
	cn := n.cluster
	s := cn.c.Status()
	s.Reports = cluster.ReportCounts{FromBroker: cn.fromBroker.Load(), ToOwner: cn.toOwner.Load(), ToAll: cn.toAll.Load(),
		RelayedIn: cn.relayedIn.Load(), NoOwner: cn.noOwner.Load()}
	s.APIForwarded = cn.apiForwarded.Load()
	s.CallsMoved = cn.replaced.Load()
	return s
}

// ClusterForwarded is how many chats this node took and forwarded to the
// node owning their conversation (0 on a node alone).
func (n *Node) ClusterForwarded() int64 {
	if n.cluster == nil {
		return 0
	}
	return n.cluster.forwarded.Load()
}

// ErrNodeLost ends a chat whose conversation's owning node left the
// cluster (died) before answering. The chat is not run again elsewhere:
// it may have partly run (see the owner's audit trail); the next chat of
// the conversation goes to the new owner, which continues from the
// shared history.
var ErrNodeLost = errors.New("the node running this conversation left the cluster")

// RemoteChatError is a chat error from the node that ran the chat, with
// the status and type that node mapped it to.
type RemoteChatError struct {
	Node    string
	Status  int
	Type    string
	Message string
	// Code is the error body's code (chatErrorCode), "" for none.
	Code string `json:",omitempty"`
	// NotStarted: the chat was refused before it started
	// (refusedBeforeStart).
	NotStarted bool `json:",omitempty"`
	// RetryAfterS is the Retry-After of a chat refused because its input
	// had no room on that node ([loop] chat_input_mb_per_hour), in
	// seconds; 0 for any other refusal.
	RetryAfterS int64 `json:",omitempty"`
}

func (e *RemoteChatError) Error() string { return e.Message + " (on node " + e.Node + ")" }

// conversationHistory is the conversations' history store: the audit
// database, and with [cluster] state_url the cluster's shared one too.
func (n *Node) conversationHistory() (actors.HistoryStore, error) {
	local := history{n.store}
	cc := n.cfg.Cluster
	if !cc.Enabled() {
		return local, nil
	}
	n.cluster = &clusterNode{askLog: boundlog.NewLimiter()}
	if cc.StateURL == "" {
		return local, nil
	}
	sh, err := cluster.OpenSharedHistory(cc.StateURL, os.Getenv(cluster.StateTokenEnv), n.cfg.NodeID)
	if err != nil {
		return nil, err
	}
	n.cluster.shared = sh
	if cc.HistoryMaxAge > 0 {
		n.startHistoryPrune(sh, cc.HistoryMaxAge)
	}
	return sharedHistory{local: local, shared: history{sh}}, nil
}

// sharedHistory appends to the node's audit database first (so the
// queued audit rows commit before the step they record, as on a node
// alone) and then to the cluster's store, and loads from the cluster's
// store: a conversation continues from there on whichever node owns it.
type sharedHistory struct {
	local, shared history
}

// The cluster's store reads the end of a conversation, as the node's does.
var _ tailReader = (*cluster.SharedHistory)(nil)

func (h sharedHistory) LoadHistory(ctx context.Context, id string) ([]llm.Message, error) {
	return h.shared.LoadHistory(ctx, id)
}

func (h sharedHistory) AppendHistory(ctx context.Context, id string, msgs []llm.Message) error {
	if err := h.local.AppendHistory(ctx, id, msgs); err != nil {
		return err
	}
	return h.shared.AppendHistory(ctx, id, msgs)
}

// historyPruneEvery is how often a node deletes the conversations of the
// shared histories idle past [cluster] history_max_age; every node does,
// and a pass another node already made deletes nothing. A pass runs at
// most historyPruneTimeout and resumes at the next.
const (
	historyPruneEvery   = time.Hour
	historyPruneTimeout = 5 * time.Minute
)

// startHistoryPrune starts the loop deleting sh's conversations whose
// newest message is older than maxAge: one pass at once, then one every
// historyPruneEvery, until shutdownActors.
func (n *Node) startHistoryPrune(sh *cluster.SharedHistory, maxAge time.Duration) {
	cn := n.cluster
	ctx, cancel := context.WithCancel(context.Background())
	cn.pruneStop, cn.pruneDone = cancel, make(chan struct{})
	go func() {
		defer close(cn.pruneDone)
		t := time.NewTicker(historyPruneEvery)
		defer t.Stop()
		for {
			pctx, pcancel := context.WithTimeout(ctx, historyPruneTimeout)
			deleted, err := sh.PruneHistory(pctx, n.now().Add(-maxAge))
			pcancel()
			switch {
			case err != nil && ctx.Err() == nil:
				n.log.Warn("delete old conversations from the cluster's shared histories", "err", err, "messages_deleted", deleted)
			case deleted > 0:
				n.log.Info("deleted old conversations from the cluster's shared histories", "messages", deleted, "max_age", maxAge.String())
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// jobClaimTimeout bounds one claim of a job run in the cluster's store.
const jobClaimTimeout = 5 * time.Second

// jobClaim is the scheduler's claim of each run in a cluster with shared
// state: the nodes that declare a job all plan its instants and the one
// whose claim sqld takes first records and runs each. Nil on a node
// alone, and in a cluster without state_url (where every node runs the
// jobs it declares, and says so at start).
func (n *Node) jobClaim() func(ctx context.Context, job, agent string, at time.Time, window time.Duration) (bool, error) {
	cn := n.cluster
	if cn == nil {
		return nil
	}
	if cn.shared == nil {
		if len(n.cfg.Jobs) > 0 {
			n.log.Warn("cluster without state_url: each node runs the jobs it declares; declare each job on one node, or set [cluster] state_url")
		}
		return nil
	}
	return func(ctx context.Context, job, agent string, at time.Time, window time.Duration) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, jobClaimTimeout)
		defer cancel()
		return cn.shared.ClaimJobRun(ctx, job, agent, at, window)
	}
}

// shutdownActors stops the actor system: leaving the cluster first when
// the node is in one.
func (n *Node) shutdownActors() {
	cn := n.cluster
	if cn == nil || cn.c == nil {
		n.system.Shutdown()
	} else {
		cn.c.Close() // leaves the cluster, then shuts the system down
	}
	if cn != nil && cn.pruneStop != nil {
		cn.pruneStop()
		<-cn.pruneDone
	}
	if cn != nil && cn.shared != nil {
		if err := cn.shared.Close(); err != nil {
			n.log.Warn("close cluster state", "err", err)
		}
	}
}

// requestTag tags the request_id of this node's commands in a cluster
// (its node id); "" on a node alone, whose ids stay as they were.
func (n *Node) requestTag() string {
	if n.cluster == nil {
		return ""
	}
	return n.cfg.NodeID
}

// reportOwner names the node a report answers: the node tag of its
// request_id (a tool or prompt command's result, progress or acceptance)
// or of its delegation token (a delegate request). "" for a report that
// answers no node in particular: heartbeats, metrics, tools_list replies,
// untagged ids, and delegate requests without a node's token.
func reportOwner(r wire.Report) string {
	if r.ReportType == wire.ReportDelegate {
		req, err := wire.DecodeDelegateRequest(r)
		if err != nil {
			return ""
		}
		rest, ok := strings.CutPrefix(req.Token, delegationTokenPrefix)
		tag, _, tagged := strings.Cut(rest, ".")
		if !ok || !tagged {
			return ""
		}
		return tag
	}
	tag, _ := actors.RequestTagOf(r.RequestID())
	return tag
}

// delegationTokenPrefix starts every delegation token; in a cluster the
// node's id and a dot follow it, so each node knows its own.
const delegationTokenPrefix = "dlg-"

// delegationToken is the token of a grant whose random part is secret.
func (n *Node) delegationToken(secret string) string {
	if tag := n.requestTag(); tag != "" {
		return delegationTokenPrefix + tag + "." + secret
	}
	return delegationTokenPrefix + secret
}
