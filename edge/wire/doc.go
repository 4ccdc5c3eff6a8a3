// Package wire defines the MQTT messages exchanged between an orchestrator and
// its edge agents: topics, commands, report envelopes, capability and status
// messages. It is the compatibility contract with the public EvoClaw agent, so
// field names and shapes follow that agent exactly; see docs/WIRE.md.
//
// Decoding is strict about what matters (required fields, types, known
// report kinds, size) and tolerant of unknown extra fields, so that newer
// peers can add fields without breaking older ones.
package wire
