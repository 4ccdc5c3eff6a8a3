package orchestrator

import (
	"errors"
	"fmt"

	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// errExternalBroker is why an agent's address is not known behind a
// broker the node does not run: MQTT tells a subscriber nothing of who
// published.
var errExternalBroker = errors.New("the node uses an external MQTT broker, which does not tell it where a client connected from")

// agentAddress is the actors' EdgeOptions.AgentAddress for a node whose
// embedded broker is b (nil: an external broker): the remote address of
// the connection holding the agent's client id, evoclaw-{id}, which the
// embedded broker requires of an agent identity (and the public agent
// uses too).
func agentAddress(b *broker.Broker) func(agentID string) (string, error) {
	if b == nil {
		return func(string) (string, error) { return "", errExternalBroker }
	}
	return func(agentID string) (string, error) {
		id := "evoclaw-" + agentID
		if addr, ok := b.ClientRemote(id); ok {
			return addr, nil
		}
		return "", fmt.Errorf("no client %q is connected to this node's broker now (it left, or in a cluster it is connected to another node)", id)
	}
}
