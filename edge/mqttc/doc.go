// Package mqttc is the MQTT client used by both the orchestrator and the edge
// agent. It wraps the Eclipse paho client with the session settings the
// EvoClaw wire protocol expects (MQTT 3.1.1, clean session, QoS 1, 30 s
// keepalive, automatic reconnect capped at 30 s) and adds what paho leaves
// to its callers: subscriptions that survive reconnects, context-aware
// publishing, errors that name what failed, and paced reconnection
// (backoff.go): back within about a second and a half of its broker early
// in an outage, with jitter (Options.ReconnectJitter) so that a fleet does
// not return in one burst, and waits that double after a refusal, a
// connection dropped soon after it was made, or two minutes of outage.
//
// # Last wills
//
// A will (Options.Will) is published by the broker only when the connection
// ends without a DISCONNECT packet: a crash, a kill, a network failure, or a
// keepalive timeout. Close sends DISCONNECT, so the broker discards the will;
// a component that wants subscribers to see it go offline on a clean shutdown
// must publish that itself before calling Close.
//
// # Concurrency
//
// A Client is safe for concurrent use. Subscription handlers run on paho's
// single message-routing goroutine, one message at a time and in order; a
// handler that blocks stalls delivery of every later message on the client
// and, for QoS 1, the acknowledgement of its own. Handlers must therefore
// hand work off (to a bounded queue or a worker) and return promptly, and
// must not call Publish or Subscribe and wait on them inline.
//
// Options.OnConnect runs on a goroutine of its own after every connection,
// once the recorded subscriptions have been re-established. A connection
// where the broker refuses one of them, or does not acknowledge it within
// ConnectTimeout, is dropped instead and OnConnect does not run for it
// (restore.go). Close waits for a
// running OnConnect to return, so OnConnect must not call Close.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package mqttc
