// Package actors holds the orchestrator's actors (protoactor-go): one per
// edge agent, one per conversation and one per tool call, plus the registry
// that routes MQTT traffic to edge actors.
//
//	edges                 registry: routes reports/status/capabilities, keeps the Catalog
//	└── edge-{agent_id}   pending requests by request_id, online state, offline detection
//	conversations         manager: one actor per conversation; keeps dormant ones' history
//	└── conv-{id}         history, tool-loop state machine; LLM calls run off the mailbox
//	    └── call-{n}      one tool call: deadline, supervised restart with backoff
//
// A conversation idle for ConvOptions.DormantAfter gives its actor up and
// the manager keeps only its history, compacted (dormant.go), until
// IdleTimeout; its next chat starts an actor with that history.
//
// # Concurrency
//
// Actors never block in Receive: MQTT publishes, LLM calls and audit commits
// run in goroutines owned by the actor that started them and come back as
// messages. The Catalog of online agents and their tools is an immutable
// snapshot swapped atomically by the registry, so a conversation reads it
// without a round trip.
//
// Apart from ProgressFunc, Progress and Answer, which the signatures of the
// embedding API use (docs/EMBEDDING.md), this package is part of evoclaw's
// implementation: other top-level folders of evoclaw share it, so it cannot
// live in an internal/ folder, and it may change without notice.
package actors
