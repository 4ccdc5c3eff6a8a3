package orchestrator

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
)

// EventChatReceived is the audit event of a chat an API client sent,
// written when the node lets the chat in (before its first message is
// stored): detail is its ChatClient and "conversation_id". An auditor
// reads from it who started a conversation's turns, from where.
const EventChatReceived = "chat_received"

// maxClientField bounds each field of a ChatClient, in bytes.
const maxClientField = 256

// ChatClient is what the node knows of the API client that sent a chat, as
// the request says it: the client's word, but for Address.
type ChatClient struct {
	// Endpoint is the path the chat came in on: /v1/chat or
	// /v1/chat/completions.
	Endpoint string `json:"endpoint"`
	// Address is the TCP peer: the client, or a reverse proxy in front.
	Address string `json:"address"`
	// ForwardedFor is the request's X-Forwarded-For, as proxies gave it:
	// its lines joined (forwardedFor), the end kept when it is long.
	ForwardedFor string `json:"forwarded_for,omitempty"`
	// UserAgent is the request's User-Agent.
	UserAgent string `json:"user_agent,omitempty"`
	// Node is the node whose API took the request (in a cluster, the chat
	// may run on another).
	Node string `json:"node"`
}

// chatClient is the client of the chat request r, taken by node.
func chatClient(r *http.Request, node string) *ChatClient {
	c := &ChatClient{Endpoint: r.URL.Path, Address: r.RemoteAddr, Node: node,
		ForwardedFor: forwardedFor(r.Header), UserAgent: r.Header.Get("User-Agent")}
	return c.bounded()
}

// bounded is c with every field cut as chatClient cuts it: a client that
// crossed from another node of the cluster.
func (c *ChatClient) bounded() *ChatClient {
	if c == nil {
		return nil
	}
	return &ChatClient{Endpoint: clientField(c.Endpoint), Address: clientField(c.Address), ForwardedFor: forwardedField(c.ForwardedFor),
		UserAgent: clientField(c.UserAgent), Node: clientField(c.Node)}
}

// clientField is s as one line of valid UTF-8 (control characters
// replaced), cut to maxClientField bytes on a rune boundary.
func clientField(s string) string { return wire.BoundText(s, maxClientField) }

// forwardedFor is h's X-Forwarded-For lines joined with ", ", as one field
// (a proxy may add its own line, as HAProxy does, instead of extending the
// client's); bounded cuts it with forwardedField. Header.Get read the
// first line alone: a client's made-up address, without the one its proxy
// saw.
func forwardedFor(h http.Header) string {
	return strings.Join(h.Values("X-Forwarded-For"), ", ")
}

// cutMark starts a forwarded_for whose start was cut.
const cutMark = "…"

// forwardedField is s as clientField makes it, but cut at its start: each
// proxy appends the address it saw, so the end of the list is what the
// proxies in front of the node say and its start what the client said. A
// client's long made-up list cut at the end left out the address its proxy
// added. A cut list starts with cutMark.
func forwardedField(s string) string {
	s = wire.BoundText(s, math.MaxInt)
	if len(s) <= maxClientField {
		return s
	}
	i := len(s) - (maxClientField - len(cutMark))
	for !utf8.RuneStart(s[i]) {
		i++
	}
	return cutMark + s[i:]
}

// recordChatReceived queues the chat_received event of in, when an API
// client sent it. It is not waited for: the chat's own records, written
// after, commit no earlier (Store.QueueEvent). A trail that cannot take it
// is logged; the chat's messages still are the record of what it did.
func (n *Node) recordChatReceived(in ChatInput) {
	c := in.Client
	if c == nil {
		return
	}
	detail, err := json.Marshal(struct {
		ConversationID string `json:"conversation_id"`
		*ChatClient
	}{in.ConversationID, c})
	if err == nil {
		err = n.store.QueueEvent(persistence.Event{Node: n.cfg.NodeID, Kind: EventChatReceived, Detail: detail}, func(err error) {
			if err != nil {
				n.log.Warn("chat_received event not recorded", "conversation", in.ConversationID, "err", err)
			}
		})
	}
	if err != nil {
		n.log.Warn("chat_received event not recorded", "conversation", in.ConversationID, "err", err)
	}
}
