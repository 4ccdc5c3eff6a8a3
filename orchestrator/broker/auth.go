package broker

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// authHook decides who may connect and, later, what they may publish and
// subscribe to. It is the single seam for access control: per-agent topic
// ACLs (an agent may publish only under its own evoclaw/agents/{id}/) belong
// in OnACLCheck.
type authHook struct {
	mqtt.HookBase
	users credentials // nil: anonymous clients allowed
	log   *slog.Logger
}

// ID names the hook in mochi's logs.
func (h *authHook) ID() string { return "evoclaw-auth" }

// Provides tells mochi which hook methods this hook implements.
func (h *authHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnConnectAuthenticate, mqtt.OnACLCheck}, []byte{b})
}

// OnConnectAuthenticate allows any client when no users are configured
// (Start only permits that on loopback) and otherwise requires a known
// username with its password.
func (h *authHook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	if h.users == nil {
		return true
	}
	user := string(pk.Connect.Username)
	ok := pk.Connect.UsernameFlag && pk.Connect.PasswordFlag && h.users.check(user, pk.Connect.Password)
	if !ok {
		h.log.Warn("mqtt client refused: bad credentials",
			logKeyRemote, cl.Net.Remote, logKeyClient, cl.ID, logKeyUser, user)
	}
	return ok
}

// OnACLCheck allows every topic for now; see the type's doc comment.
func (h *authHook) OnACLCheck(*mqtt.Client, string, bool) bool { return true }

// credentials holds SHA-256 digests of passwords, so that comparisons take the
// same time whatever the password's length.
type credentials map[string][sha256.Size]byte

func newCredentials(users map[string]string) credentials {
	if len(users) == 0 {
		return nil
	}
	c := make(credentials, len(users))
	for u, p := range users {
		c[u] = sha256.Sum256([]byte(p))
	}
	return c
}

// check reports whether password belongs to user. For an unknown user it
// compares against the zero digest, so that both paths do the same work.
func (c credentials) check(user string, password []byte) bool {
	want, known := c[user]
	got := sha256.Sum256(password)
	match := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	return known && match
}
