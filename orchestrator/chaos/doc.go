// Package chaos runs fault scenarios against a real evoclaw deployment on
// one machine: an orchestrator node (in this process, or a child process
// where the scenario kills it), edge agents and (where the scenario kills
// it) an MQTT broker as child processes of the evoclaw binary, and a
// loopback TCP proxy that can cut the network.
//
// Every scenario drives a stream of tool calls through the orchestrator's
// tool loop while it injects its fault, then checks what must hold after
// any fault: no tool call ran twice, every call ended with a result or a
// typed error within a bound, every call the orchestrator answered is in
// its audit trail, every run on an agent is in the agent's, and the two
// join by request_id. It measures the time to recover.
//
// The scenarios are used by the package's tests and by `evoclaw chaos`.
//
// # Concurrency
//
// A Run owns everything it starts: child processes are killed and waited
// for, the proxy's goroutines end at Close, and the calls started in the
// background are waited for before the checks. A Run is not safe for
// concurrent use; separate Runs are independent.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package chaos
