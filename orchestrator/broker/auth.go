package broker

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/evoclaw/evoclaw/edge/rate"
)

// errRevoked is the stop cause of a session whose identity was removed or
// changed by a reload, or that published outside its topics.
var errRevoked = errors.New("mqtt access revoked")

// certFingerprint marks a session authenticated by a client certificate: a
// password change does not end it; removing the identity does.
const certFingerprint = "x509"

// session is what the broker knows about one connected client, from its
// authentication until OnDisconnect (or, for a persistent session the
// client id still holds, until it expires or a newer client takes it).
type session struct {
	identity
	fingerprint string // account.fingerprint at authentication, or certFingerprint

	// mu guards ended and takenOver, which the client's OnDisconnect and
	// the OnSessionEstablish of a newer client with its id set in either
	// order (takeover.go).
	mu sync.Mutex
	// ended: OnDisconnect ran, so no last will of this client is to come.
	ended bool
	// takenOver: a newer connection took over the client id while this
	// client was still attached; its will goes nowhere (OnWill).
	takenOver bool
}

// authHook decides who may connect and what each client may publish and
// subscribe to (acl.go). Every refusal is logged through log, which bounds
// each line and rate-limits them (edge/boundlog).
type authHook struct {
	mqtt.HookBase
	server    *mqtt.Server
	accts     atomic.Pointer[accounts]
	anonymous bool // clients without credentials get roleAnonymous
	verify    *verifier
	sessions  sync.Map     // *mqtt.Client → *session, from authentication to disconnect
	log       *slog.Logger // bounded and rate-limited: lines quote client input

	// agentRate and agentBurst bound what each agent identity publishes,
	// in bytes (Options.AgentPublishBytesPerSecond); agentRate < 0: no
	// bound. published holds one limiter per agent identity that
	// published: at most the identities of the users file, since
	// setAccounts drops those of removed identities.
	agentRate, agentBurst int
	published             sync.Map // identity name → *rate.Limiter

	// takeovers bounds the lines about session takeovers per client id
	// (takeover.go); nil logs none.
	takeovers *rate.Quota
	// fresh, when set, looks a refused login's name up in the users file
	// as it is now (Broker.freshAccount); nil: the identities loaded are
	// the only ones.
	fresh func(name string) (*account, int)
}

// ID names the hook in mochi's logs.
func (h *authHook) ID() string { return "evoclaw-auth" }

// Provides tells mochi which hook methods this hook implements.
func (h *authHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnPacketRead, mqtt.OnPublish, mqtt.OnDisconnect, mqtt.OnClientExpired, mqtt.OnSessionEstablish, mqtt.OnWill}, []byte{b})
}

// OnConnectAuthenticate authenticates the client (certificate, password or,
// when allowed, anonymous), then admits it only if its last will is on a
// topic it may publish, an agent uses its own client id (evoclaw-{id}), and
// it does not take over a client id held by another identity.
func (h *authHook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	// Decided either way: the connection no longer counts against
	// Options.MaxPendingConnects (a refused one is closed right after).
	defer loggedIn(cl.Net.Conn)
	s, err := h.authenticate(cl, pk)
	if err == nil {
		err = h.admit(cl, pk, s.identity)
	}
	if err != nil {
		h.refuse("mqtt client refused", cl, string(pk.Connect.Username), logKeyReason, err.Error())
		return false
	}
	h.sessions.Store(cl, s)
	return true
}

func (h *authHook) authenticate(cl *mqtt.Client, pk packets.Packet) (*session, error) {
	accts := *h.accts.Load()
	user := string(pk.Connect.Username)
	if st, ok := tlsState(cl.Net.Conn); ok {
		if len(st.VerifiedChains) > 0 {
			cn := st.PeerCertificates[0].Subject.CommonName
			if pk.Connect.UsernameFlag && user != cn {
				return nil, fmt.Errorf("username %q differs from its certificate's common name %q", user, cn)
			}
			// Only an identity of the users file: `evoclaw agents remove`
			// must be able to revoke a certificate (there is no CRL), and
			// in-memory identities (the node's own session) are no one's
			// to claim by certificate.
			a := accts.byName[cn]
			if (a == nil || !a.inFile()) && h.fresh != nil {
				a, _ = h.fresh(cn)
			}
			if a == nil || !a.inFile() {
				return nil, fmt.Errorf("certificate common name %q is not an identity of the users file", cn)
			}
			return &session{identity: a.identity, fingerprint: certFingerprint}, nil
		}
	}
	if !pk.Connect.UsernameFlag || user == "" {
		if !h.anonymous {
			return nil, errors.New("anonymous clients are not allowed")
		}
		return &session{identity: identity{role: roleAnonymous}}, nil
	}
	a := accts.byName[user]
	ok, err := h.verify.check(user, a, pk.Connect.Password, accts.cost)
	if errors.Is(err, errVerifyBusy) {
		// Undecided, not refused: close the connection before the CONNACK
		// so that the client retries (a refusal would be final for it).
		cl.Stop(err)
		return nil, err
	}
	if !ok && err == nil && pk.Connect.PasswordFlag && h.fresh != nil {
		if fa, cost := h.fresh(user); fa != nil {
			a = fa
			ok, err = h.verify.check(user, fa, pk.Connect.Password, cost)
			if errors.Is(err, errVerifyBusy) {
				cl.Stop(err)
				return nil, err
			}
		}
	}
	if !pk.Connect.PasswordFlag || !ok {
		return nil, errors.New("bad username or password")
	}
	return &session{identity: a.identity, fingerprint: a.fingerprint}, nil
}

func (h *authHook) admit(cl *mqtt.Client, pk packets.Packet, id identity) error {
	if pk.Connect.WillFlag && !id.mayPublish(pk.Connect.WillTopic) {
		return fmt.Errorf("last will on %q, a topic %s %q may not publish on", pk.Connect.WillTopic, id.role, id.name)
	}
	if why := neverRetained(pk.Connect.WillTopic); pk.Connect.WillFlag && pk.Connect.WillRetain && why != "" {
		return fmt.Errorf("retained last will on %q: %s", pk.Connect.WillTopic, why)
	}
	if want := "evoclaw-" + id.name; id.role == RoleAgent && cl.ID != want {
		return fmt.Errorf("client id %q: agent %q must use %q", cl.ID, id.name, want)
	}
	if h.server == nil {
		return nil
	}
	if old, ok := h.server.Clients.Get(cl.ID); ok && !old.Closed() {
		if s := h.session(old); s == nil || s.identity != id {
			return fmt.Errorf("client id %q is in use by another identity", cl.ID)
		}
	}
	return nil
}

// OnACLCheck applies the access control list (acl.go). A client that
// publishes outside its topics is disconnected: a well-behaved client never
// does, and mochi would otherwise drop QoS 0 messages silently.
func (h *authHook) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	s := h.session(cl)
	ok := s != nil && (write && s.mayPublish(topic) || !write && s.mayRead(topic))
	if ok {
		return true
	}
	op := "subscribe or receive"
	if write {
		op = "publish"
	}
	h.refuse("mqtt access denied", cl, string(cl.Properties.Username), logKeyOp, op, logKeyTopic, topic)
	if write {
		h.revoke(cl)
	}
	return false
}

// OnPacketRead refuses, for every identity, a PUBLISH on a topic no client
// may publish on (under $SYS/ or with a wildcard), which mochi would drop
// before asking OnACLCheck, without an answer or a log line, and a retained
// PUBLISH on an agent's commands or reports topic (neverRetained), which
// OnACLCheck cannot see (it is not told the retain flag). Both are treated like any publish outside the
// client's topics.
func (h *authHook) OnPacketRead(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Type != packets.Publish || pk.TopicName == "" {
		return pk, nil
	}
	var why string
	switch {
	case !mqtt.IsValidFilter(pk.TopicName, true):
		why = "topic reserved for the broker or not a topic name"
	case pk.FixedHeader.Retain && neverRetained(pk.TopicName) != "":
		why = neverRetained(pk.TopicName)
	default:
		return pk, nil
	}
	h.refuse("mqtt access denied", cl, string(cl.Properties.Username), logKeyOp, "publish", logKeyTopic, pk.TopicName,
		logKeyReason, why)
	h.revoke(cl)
	return pk, packets.ErrRejectPacket
}

// OnPublish drops a publish of an agent identity past its byte rate
// (Options.AgentPublishBytesPerSecond), keeping the connection: an MQTT 5
// client's QoS 1 publish is answered "quota exceeded" (0x97), anything
// else is not answered. Each drop is logged (bounded, rate-limited).
func (h *authHook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	s := h.session(cl)
	if h.agentRate < 0 || s == nil || s.role != RoleAgent {
		return pk, nil
	}
	v, ok := h.published.Load(s.name)
	if !ok {
		v, _ = h.published.LoadOrStore(s.name, rate.New(float64(h.agentRate), h.agentBurst))
	}
	if v.(*rate.Limiter).Take(time.Now(), len(pk.Payload)+len(pk.TopicName)) {
		return pk, nil
	}
	h.refuse("mqtt publish dropped: the agent is over its byte rate", cl, s.name, logKeyTopic, pk.TopicName,
		"bytes", len(pk.Payload), "bytes_per_second", h.agentRate)
	if pk.FixedHeader.Qos > 0 && cl.Properties.ProtocolVersion == 5 {
		return pk, packets.ErrQuotaExceeded
	}
	return pk, packets.ErrRejectPacket
}

// revoke ends the session of a client that published outside its topics:
// an MQTT 5 client is told why (DISCONNECT 0x87, not authorized), a 3.1.1
// client, which has no way to hear it, is disconnected.
func (h *authHook) revoke(cl *mqtt.Client) {
	if h.server != nil && cl.Properties.ProtocolVersion == 5 {
		_ = h.server.DisconnectClient(cl, packets.ErrNotAuthorized) // it stops the client whatever the write did
		return
	}
	cl.Stop(errRevoked)
}

// OnDisconnect forgets the client's session unless the broker keeps it for
// a client that asked for a persistent one and still holds its client id
// (messages queued for it are still checked against its identity), and
// logs a client dropped for sending a packet over the size limit
// (Options.MaxPacketBytes). A client whose id a newer connection took
// over is forgotten whatever it asked for: the newer one has the session,
// and nothing would ever forget the older one (mochi expires only the
// client its table holds), so an agent reconnecting with a persistent
// session in a loop grew the node by some 68 KB a connection.
func (h *authHook) OnDisconnect(cl *mqtt.Client, err error, expire bool) {
	s := h.session(cl)
	if errors.Is(err, packets.ErrPacketTooLarge) {
		user := ""
		if s != nil {
			user = s.name
		}
		h.refuse("mqtt client disconnected: packet over the size limit", cl, user)
	}
	if s == nil {
		return
	}
	s.mu.Lock()
	s.ended = true // its will, if any, was due before this
	replaced := s.takenOver
	s.mu.Unlock()
	if expire || replaced || !h.holdsID(cl) {
		h.sessions.Delete(cl)
	}
}

// holdsID says whether cl is the client the broker's table holds for its
// client id (with no server, as in unit tests: yes).
func (h *authHook) holdsID(cl *mqtt.Client) bool {
	if h.server == nil {
		return true
	}
	cur, ok := h.server.Clients.Get(cl.ID)
	return ok && cur == cl
}

// OnClientExpired forgets a persistent session the broker dropped.
func (h *authHook) OnClientExpired(cl *mqtt.Client) { h.sessions.Delete(cl) }

func (h *authHook) session(cl *mqtt.Client) *session {
	v, ok := h.sessions.Load(cl)
	if !ok {
		return nil
	}
	return v.(*session)
}

// setAccounts installs a new snapshot of identities and ends the sessions it
// no longer allows.
func (h *authHook) setAccounts(accts accounts) {
	h.accts.Store(&accts)
	h.verify.forget(accts)
	h.published.Range(func(name, _ any) bool {
		if accts.byName[name.(string)] == nil {
			h.published.Delete(name) // a removed identity's byte rate
		}
		return true
	})
	h.sessions.Range(func(k, v any) bool {
		cl, s := k.(*mqtt.Client), v.(*session)
		if cl.Closed() && cl.Properties.Clean {
			h.sessions.Delete(cl) // missed by OnDisconnect: CONNACK failed
			return true
		}
		if s.role == roleAnonymous {
			return true
		}
		var why string
		switch a := accts.byName[s.name]; {
		case a == nil:
			why = "identity removed"
		case a.role != s.role:
			why = "role changed"
		case s.fingerprint != certFingerprint && s.fingerprint != a.fingerprint:
			why = "password changed"
		default:
			return true
		}
		// Forget it too: messages queued for a persistent session must not
		// pass the ACL on the old identity.
		h.sessions.Delete(cl)
		if !cl.Closed() {
			h.log.Warn("mqtt session ended", logKeyClient, cl.ID, logKeyUser, s.name, logKeyReason, why)
			cl.Stop(errRevoked)
		}
		return true
	})
}

// refuse logs a refusal; h.log bounds and rate-limits it.
func (h *authHook) refuse(msg string, cl *mqtt.Client, user string, attrs ...any) {
	attrs = append([]any{logKeyRemote, cl.Net.Remote, logKeyClient, cl.ID, logKeyUser, user}, attrs...)
	h.log.Warn(msg, attrs...)
}
