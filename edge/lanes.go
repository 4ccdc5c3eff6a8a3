package edge

import "sync"

// lanes caps how many calls of one tool run at once at perTool, one less
// than the workers, so that slow or stuck calls of one tool (a hung file
// system, a tool that sleeps) always leave a worker for everything else.
// A tool command that would pass the cap is parked, holding no worker,
// and run by the worker that finishes the next call of the same tool.
// Parked commands are bounded (a full lane is refused as busy, like a
// full queue); their expiry is checked when they finally run.
//
// # Concurrency
//
// Safe for concurrent use; it starts nothing.
type lanes struct {
	perTool   int // calls of one tool running at once
	maxParked int // commands parked across all tools

	mu      sync.Mutex          // guards running, parked and nParked
	running map[string]int      // calls running, by tool
	parked  map[string][]queued // commands waiting for their tool, oldest first
	nParked int
}

func newLanes(workers, maxParked int) *lanes {
	return &lanes{perTool: max(1, workers-1), maxParked: maxParked, running: map[string]int{}, parked: map[string][]queued{}}
}

// take reports whether q, a call of tool, may run now (the caller must
// call done after it); otherwise it was parked, or refused when parked
// reports false.
func (l *lanes) take(tool string, q queued) (run, parked bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[tool] < l.perTool {
		l.running[tool]++
		return true, false
	}
	if l.nParked >= l.maxParked {
		return false, false
	}
	l.parked[tool] = append(l.parked[tool], q)
	l.nParked++
	return false, true
}

// done ends a call of tool. When a command of that tool is parked it is
// returned to be run next by the caller, which then calls done again.
func (l *lanes) done(tool string) (queued, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.parked[tool]; len(p) > 0 {
		next := p[0]
		if len(p) == 1 {
			delete(l.parked, tool)
		} else {
			l.parked[tool] = p[1:]
		}
		l.nParked--
		return next, true // its slot passes on
	}
	if l.running[tool]--; l.running[tool] == 0 {
		delete(l.running, tool)
	}
	return queued{}, false
}
