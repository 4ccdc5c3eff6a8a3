// Package mqtttest starts MQTT brokers for tests: the embedded broker of
// orchestrator/broker and, when installed, a mosquitto child process, so that
// contract tests can run the same assertions against both.
//
// Contract tests use ForEachBroker, which runs a subtest per implementation
// with a fresh broker that it can stop and restart on the same port.
//
// It is an ordinary package, not a _test file, so that the tests of any
// package can import it. Everything it starts is stopped by t.Cleanup.
//
// Set EVOCLAW_REQUIRE_PEERS=1 (as CI should) to turn a missing mosquitto from
// a skip into a failure.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package mqtttest
