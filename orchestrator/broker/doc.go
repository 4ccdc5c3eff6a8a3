// Package broker runs the MQTT broker that the orchestrator embeds, so that a
// single binary is enough for a laptop or a Pi: edge agents connect to it on
// the evoclaw/agents/{id}/... topics.
//
// The broker is mochi-mqtt v2 with one TCP listener and one auth hook of our
// own. Retained messages and last wills work as MQTT 3.1.1 specifies; the
// system relies on both (retained capabilities and status, and a retained
// "offline" will).
//
// # Security
//
// An edge agent runs shell commands it receives over MQTT, so whoever can
// publish to the broker can run commands on every agent. Start therefore
// refuses to listen on a non-loopback address without configured users
// ([ErrExposedAnonymous]) unless the caller opts in explicitly with
// Options.AllowAnonymousNonLoopback. With users configured, every client must
// present a matching username and password, on every interface. Topic ACLs
// are not enforced yet; the auth hook (auth.go) is the place for them.
//
// # Concurrency
//
// A Broker is safe for concurrent use. Start returns once the listener is
// bound and accepting; Close stops accepting, disconnects every client,
// waits until all connection goroutines have returned, and may be called
// any number of times from any goroutine.
package broker
