// Package attack holds the attack set: a representative probe of every
// class of attack an attack round ran against evoclaw, each against real
// processes (sandboxes, an orchestrator node with its embedded broker,
// `evoclaw edge` and `evoclaw audit verify` processes), in one test that
// prints how many attempts each class made and how many held:
//
//	go test -v -run TestAttackSet ./orchestrator/chaos/attack
//
// Every class that must hold fails the test when one attempt gets
// through. The shell guard is reported, never asserted: it is a speed
// bump against an LLM's mistakes, not a boundary (docs/SECURITY.md).
// The individual regression tests of each class live beside the code they
// test; this package reuses their helpers (sandboxtest, evoclawtest,
// mqtttest) so that a reviewer has one place that runs every class.
package attack
