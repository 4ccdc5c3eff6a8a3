package broker

import (
	"sort"

	"github.com/mochi-mqtt/server/v2"
)

// ClientInfo is one client connected to the broker.
type ClientInfo struct {
	ID       string `json:"id"`
	Username string `json:"username,omitempty"`
	Remote   string `json:"remote"`
}

// Clients lists the clients connected now, sorted by id. A session kept
// for a client that went away is not listed.
func (b *Broker) Clients() []ClientInfo {
	var out []ClientInfo
	for id, cl := range b.server.Clients.GetAll() {
		if cl.Closed() || cl.Net.Inline {
			continue
		}
		out = append(out, clientInfo(id, cl))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func clientInfo(id string, cl *mqtt.Client) ClientInfo {
	return ClientInfo{ID: id, Username: string(cl.Properties.Username), Remote: cl.Net.Remote}
}

// ClientRemote is the network address of the connected client whose
// client id is id; false when none is connected now under that id.
func (b *Broker) ClientRemote(id string) (string, bool) {
	cl, ok := b.server.Clients.Get(id)
	if !ok || cl.Closed() || cl.Net.Inline {
		return "", false
	}
	return cl.Net.Remote, true
}
