// Package wire defines the MQTT messages exchanged between an orchestrator and
// its edge agents: topics, commands, report envelopes, capability and status
// messages. It is the compatibility contract with the public EvoClaw agent, so
// field names and shapes follow that agent exactly; see docs/WIRE.md.
//
// Decoding is strict about what matters (required fields, types, known
// report kinds, size) and tolerant of unknown extra fields, so that newer
// peers can add fields without breaking older ones.
//
// Apart from ErrorType and its constants, which the signatures of the
// embedding API use (docs/EMBEDDING.md), this package is part of evoclaw's
// implementation: other top-level folders of evoclaw share it, so it cannot
// live in an internal/ folder, and it may change without notice.
package wire
