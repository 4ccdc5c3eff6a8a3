package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Garbage collection of the two long-running roles (serve and edge).
//
// Start-up allocates a few MB that are garbage once the role is ready
// (configuration, the audit schema, TLS and MQTT set-up, the HTTP routes).
// With the collector's default goal the orchestrator's heap crosses its
// 4 MB minimum during start-up and a collection runs beside it, on a
// board's one or two cores. So serve starts with a laxer goal, restored
// once the role is ready.
//
// The collector's own bookkeeping (mark bits, work buffers, span queues)
// is allocated by its first collections and kept: the first collection of
// a process adds 0.3-0.6 MB of private memory outside the heap, the next
// few some tens of KB each until it levels off. An idle process collects
// only every two minutes (the runtime's forced collection), so that
// bookkeeping used to arrive over the first ten to twenty minutes of
// idling, and with it the garbage of heartbeats and housekeeping: private
// memory crept up by 0.4-0.9 MB while nothing happened. Now, once a role
// is ready, settle runs warmUpCycles collections and returns the free
// memory (start-up's garbage) to the OS, so the process reaches its idle
// level at once; idleTrim then collects and returns what heartbeats and
// housekeeping allocate whenever the process was idle for a while, so it
// stays there.
//
// Neither role reads memory profiles (no pprof endpoint), so both turn the
// runtime's allocation sampling off: every sampled allocation with a new
// call stack kept a profile bucket, and the bucket table's pages, for the
// life of the process.

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
	idleTrimMinGarbage = 16 << 10
)

// warmUpCycles is how many collections settle runs: the collector's
// bookkeeping grows over its first few cycles and then levels off.
const warmUpCycles = 4

// noMemProfile turns off the runtime's allocation sampling for the rest
// of the process (see above), unless a heap profile was asked for
// (memProfileEnv, profile.go). Call it first thing in a long-running role.
func noMemProfile() {
	if os.Getenv(memProfileEnv) == "" {
		runtime.MemProfileRate = 0
	}
}

// settle collects start-up's garbage and the collector's first cycles at
// once (see above), then trims at idle until ctx ends.
func settle(ctx context.Context) {
	for range warmUpCycles - 1 {
		runtime.GC()
	}
	debug.FreeOSMemory() // the last cycle, and the return of free memory
	idleTrim(ctx)
}

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
