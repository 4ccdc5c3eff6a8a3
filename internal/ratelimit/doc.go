// Package ratelimit holds the small limiters the orchestrator puts between
// outside input and what it costs: a token bucket (Bucket), one per key for
// messages and bytes (Inbound), and a fixed-window quota that admits a few
// events per window and counts the rest (Window, Quota).
//
// Every method takes the current time as an argument, so tests drive them
// with a fake clock and no sleeps. The zero value of each type is not ready;
// use the constructors.
//
// # Concurrency
//
// Inbound, Window and Quota are safe for concurrent use; Bucket is not (it
// is the building block Inbound guards with its own mutex).
package ratelimit
