// Package libsqlhttp opens connections to a libSQL server over HTTP
// (through github.com/tursodatabase/libsql-client-go) that a broken,
// hostile or impersonated server cannot turn against the node.
//
// The client library sends every request with http.DefaultClient and
// trusts every answer: it reads a body of any size into memory, follows
// redirects with the auth token (Go's client keeps the Authorization header
// on a redirect to another port or from https to http of the same host),
// sends later requests wherever an answer's base_url points, and indexes
// into answers without checking them, so a malformed one panics the
// process. [Open] returns a connector whose requests go through a guard
// instead: each request is bounded in time, an answer in bytes and in
// JSON values ([Limits]), a redirect is refused, a request to any other server than
// the configured one (where a base_url pointed) is refused and its connection dropped, a panic while reading an answer becomes an error
// ([ErrMalformedAnswer]), and the text of every error is escaped and cut
// so that a server cannot write to a terminal or a log through it.
//
// # Concurrency
//
// A connector from Open is safe for concurrent use, as database/sql needs.
//
// This package is part of evoclaw's implementation, not its embedding API.
package libsqlhttp
