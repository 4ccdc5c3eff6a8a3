package broker

import (
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

// OnSessionEstablish marks the client whose session cl takes over, so
// that its last will goes nowhere (OnWill), and warns, within the quota,
// when that client was still connected; mochi disconnects it right after
// this hook (inheritClientSession). Authentication has admitted cl: a
// takeover by another identity was refused before (admit). A client whose
// OnDisconnect already ran (a persistent session that went away) has sent
// its will, if any, and is forgotten here: cl replaces it.
func (h *authHook) OnSessionEstablish(cl *mqtt.Client, _ packets.Packet) {
	if h.server == nil {
		return
	}
	old, ok := h.server.Clients.Get(cl.ID)
	if !ok || old == cl {
		return
	}
	if s := h.session(old); s != nil {
		s.mu.Lock()
		ended := s.ended
		s.takenOver = !ended
		s.mu.Unlock()
		if ended {
			h.sessions.Delete(old)
		}
	}
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

// droppedWillTopic is where the will of a session taken over goes: a
// topic under "$", which no wildcard subscription matches (MQTT 4.7.2),
// and which no identity of the fleet may subscribe to.
const droppedWillTopic = "$evoclaw/will-of-a-session-taken-over"

// OnWill sends the last will of a client whose session a newer connection
// took over nowhere, not retained. The will would be false: it says the
// client is gone while the newer connection holds its id. Mochi publishes
// it from the old connection's goroutine, after the takeover, so it could
// land after the newer connection's retained "online" and leave an agent
// that is connected marked "offline". The newer connection's own will
// covers its end. (A hook cannot cancel a will, and writing the old
// client's will itself would race with mochi, which clears it unlocked.)
func (h *authHook) OnWill(cl *mqtt.Client, will mqtt.Will) (mqtt.Will, error) {
	if s := h.session(cl); s != nil {
		s.mu.Lock()
		takenOver := s.takenOver
		s.mu.Unlock()
		if takenOver {
			will.TopicName, will.Retain = droppedWillTopic, false
		}
	}
	return will, nil
}
