// Package testenv is the test vocabulary every package of evoclaw shares:
// Eventually to poll for a condition with a deadline, FreePort for a
// loopback port, Buffer to capture what a logger or a child process writes
// from other goroutines, Recorded to collect what the code under test
// hands over, WantErr and LoadFile for the error cases of table tests and
// configuration files, and the peers tests run against (mosquitto, sqld,
// sshd, bwrap, firejail): Find locates one or skips the test loudly, Start runs
// one as a child process on a free port until it is ready and stops it when
// the test ends.
//
// A missing peer skips the test with a message saying that tests did NOT
// run, or fails it when EVOCLAW_REQUIRE_PEERS=1, as CI sets.
//
// It is an ordinary package, not a _test file, so that the tests of any
// package can import it, and it imports only the standard library, so that
// a package's internal tests can import it without a cycle.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package testenv
