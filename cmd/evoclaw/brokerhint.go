package main

import (
	"errors"

	"github.com/evoclaw/evoclaw/edge/mqttc"
)

// brokerRefusedHint says what to do when the MQTT broker refused the
// CONNECT of serve or edge (a user name or password it does not accept,
// or none where it wants one): the error alone, "not Authorized", named
// neither the keys that carry the credentials nor where they come from.
// It is empty for any other error and command.
func brokerRefusedHint(command string, err error) string {
	if !errors.Is(err, mqttc.ErrRefused) {
		return ""
	}
	switch command {
	case "serve":
		return "the broker wants a user name and password it accepts: give this node its broker user in evoclaw.toml, " +
			"[broker] username and password_env (the environment variable that holds the password); docs/CONFIG.md"
	case "edge":
		return "the broker wants a user name and password it accepts: give this agent its broker user in agent.toml, " +
			"[mqtt] username and password_env (the environment variable that holds the password, " + agentPasswordEnv +
			" in the lines `evoclaw agents add " + "NAME` prints on the node; --rotate there gives a new password); docs/SECURITY.md"
	}
	return ""
}
