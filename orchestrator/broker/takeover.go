package broker

import (
	"sync/atomic"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/evoclaw/evoclaw/edge/rate"
)

// A client that connects with the client id of a connected client takes
// its session over: the broker disconnects the older one (MQTT 3.1.4-3).
// Two edge agents given the same agent_id (a copied agent.toml) do that to
// each other at every reconnect, for ever, and each logs only "connection
// lost ... EOF". The broker is the one place that sees both addresses, so
// it warns there, within a quota per client id; the takeovers past it are
// counted and the next line that passes says how many it stands for.
const (
	// takeoverLines is how many takeover lines one client id logs per
	// takeoverWindow: a reconnecting agent whose old connection the broker
	// had not yet seen die causes one.
	takeoverLines = 3
	// takeoverWindow is the window of takeoverLines: under a takeover
	// storm, at most 18 lines an hour per id.
	takeoverWindow = 10 * time.Minute
)

// newTakeoverQuota returns the quota of takeover lines, per client id, for
// at most rate.DefaultMaxKeys ids at once (an id past that is not logged).
func newTakeoverQuota() *rate.Quota { return rate.NewQuota(takeoverLines, takeoverWindow) }

// OnSessionEstablish drops the last will of the client whose session cl
// takes over, and warns, within the quota, when that client was still
// connected; mochi disconnects it right after this hook
// (inheritClientSession). Authentication has admitted cl: a takeover by
// another identity was refused before (admit).
//
// The will goes because it would be false: it says the client is gone
// while cl holds its id. Mochi publishes it from the old connection's
// goroutine, after the takeover, so it could land after cl's retained
// "online" and leave the agent's retained status "offline" while the agent
// is connected. cl's own will covers cl's end.
func (h *authHook) OnSessionEstablish(cl *mqtt.Client, _ packets.Packet) {
	if h.server == nil {
		return
	}
	old, ok := h.server.Clients.Get(cl.ID)
	if !ok || old == cl {
		return
	}
	atomic.StoreUint32(&old.Properties.Will.Flag, 0) // as mochi marks a will sent
	if old.Closed() || h.takeovers == nil {
		return
	}
	unlogged, ok := h.takeovers.Allow(cl.ID, time.Now())
	if !ok {
		return
	}
	user := ""
	if s := h.session(cl); s != nil {
		user = s.name
	}
	args := []any{logKeyClient, cl.ID, logKeyUser, user, logKeyOldRemote, old.Net.Remote, logKeyNewRemote, cl.Net.Remote}
	if unlogged > 0 {
		args = append(args, logKeyUnlogged, unlogged)
	}
	// Under boundlog's cut of a message: the rest is in SECURITY.md.
	h.log.Warn("mqtt session taken over: two clients use one id? Each ends the other's connection; give each agent its own agent_id", args...)
}
