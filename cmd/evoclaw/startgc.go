package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Garbage collection of the orchestrator (serve).
//
// Start-up allocates a few MB that are garbage once the role is ready
// (configuration, the audit schema, TLS and MQTT set-up, the HTTP routes).
// With the collector's default goal the heap crosses its 4 MB minimum
// during start-up and a collection runs beside it, on a board's one or two
// cores. So start-up runs with a laxer goal, restored once the role is
// ready; the next collection then comes soon.
//
// At idle, what heartbeats and housekeeping allocate stays in the process
// until the next collection (at the latest the runtime's forced one every
// two minutes), and freed pages are returned only gradually. idleTrim
// collects and returns them whenever the process was idle for a while, so
// an idle process's private memory stays flat at what it holds live.
//
// Returning memory at ready as well (debug.FreeOSMemory) was tried: an
// idle edge agent then held 0.35-0.45 MB more private memory for minutes
// than one without it (agents side by side for five minutes), so the
// first return waits for idleTrim. The edge agent has neither: it
// allocates about 2 KB/s at idle, and its first trim cost it 0.37 MB of
// private memory that stayed (side by side with an agent that did not
// trim, four minutes).

// startupGCPercent is the collector's goal (GOGC) during start-up.
const startupGCPercent = 400

// startupGC sets the start-up goal, unless GOGC is set (the operator's
// choice stands), and returns what to call once the role is ready: it
// restores the goal. It is safe to call more than once.
func startupGC() (ready func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(startupGCPercent)
	return sync.OnceFunc(func() { debug.SetGCPercent(old) })
}

// Idle trimming: every idleTrimEvery, a process that allocated less than
// idleAllocBytes since the last look (it is idle), and at least
// idleTrimMinGarbage since it last trimmed (there is something to give
// back: at idle nearly everything allocated is garbage soon), collects and
// returns the free memory to the OS. Under load it does nothing.
const (
	idleTrimEvery      = 30 * time.Second
	idleAllocBytes     = 4 << 20
	idleTrimMinGarbage = 256 << 10
)

// idleTrim trims at idle until ctx ends (see above).
func idleTrim(ctx context.Context) {
	t := time.NewTicker(idleTrimEvery)
	defer t.Stop()
	m := newIdleMeter()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if m.tick() {
			debug.FreeOSMemory()
			m.trimmed()
		}
	}
}

// idleMeter decides when to trim, from the bytes the process allocated.
type idleMeter struct {
	allocs     func() uint64 // bytes allocated so far
	last, trim uint64        // allocs at the last tick, at the last trim
}

func newIdleMeter() *idleMeter {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	m := &idleMeter{allocs: func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}}
	m.last = m.allocs()
	m.trim = m.last
	return m
}

// tick reads the allocations anew and tells whether to trim now.
func (m *idleMeter) tick() bool {
	now := m.allocs()
	idle := now-m.last < idleAllocBytes
	m.last = now
	return idle && now-m.trim >= idleTrimMinGarbage
}

// trimmed notes a trim.
func (m *idleMeter) trimmed() { m.trim = m.allocs() }
