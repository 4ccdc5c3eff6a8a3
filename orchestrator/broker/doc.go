// Package broker runs the MQTT broker that the orchestrator embeds, so that a
// single binary is enough for a laptop or a Pi: edge agents connect to it on
// the evoclaw/agents/{id}/... topics.
//
// The broker is mochi-mqtt v2 with one TCP listener and one auth hook of our
// own. Retained messages and last wills work as MQTT 3.1.1 specifies; the
// system relies on both (retained capabilities and status, and a retained
// "offline" will), except that the will of a session taken over by a newer
// connection with its client id is dropped (takeover.go).
//
// # Security
//
// An edge agent runs commands it receives over MQTT, so whoever can publish
// to the broker can run commands on every agent. Every client therefore
// authenticates (auth.go) as an identity with a role, and an access control
// list (acl.go) confines it:
//
//   - RoleAgent "X" may publish only on evoclaw/agents/X/reports,
//     capabilities and status (its last will included), may subscribe only
//     to evoclaw/agents/X/commands, and must use client id evoclaw-X;
//   - RoleOrchestrator may publish only commands, and read anything under
//     evoclaw/agents/.
//
// Identities come from Options.Users (in memory: the node's own session)
// and from the users file written by `evoclaw agents` (bcrypt hashes,
// userfile.go), which the broker re-reads when it changes (watch.go),
// ending sessions it no longer allows. A TLS client certificate signed by
// Options.TLS.ClientCAFile authenticates the identity of the users file
// named by its common name (never an in-memory one). No identity may take over a client id another one holds. A client
// that publishes outside its topics, to $SYS/ or to a wildcard topic is
// disconnected (an MQTT 5 client first gets DISCONNECT 0x87); refused
// subscriptions get SUBACK 0x80. Every refusal is logged; every line that
// quotes a client, mochi's included, is cut and rate-limited
// (edge/boundlog) through Options.LogLimiter.
//
// Before mochi sees a connection, its listener (listener.go, preauth.go)
// refuses a first packet that is not a CONNECT of at most MaxConnectBytes,
// and closes connections beyond Options.MaxPendingConnects that have not
// logged in: what a client costs before authenticating is bounded.
//
// Anonymous clients are refused unless Options.AllowAnonymous is set, which
// Start accepts only when every listener is on a loopback address
// ([ErrExposedAnonymous]).
//
// bcrypt is slow on purpose; verify.go bounds the checks running at once
// and caches successes per identity (keyed digests, memory only) so that
// reconnecting agents cost microseconds; see BenchmarkConnect.
//
// # Concurrency
//
// A Broker is safe for concurrent use. Start returns once the listener is
// bound and accepting; Close stops accepting, disconnects every client,
// waits until all connection goroutines have returned, and may be called
// any number of times from any goroutine.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package broker
