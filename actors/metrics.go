package actors

import (
	"sort"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// Metrics aggregates tool-loop counters across all conversations of a
// node. The zero value is ready for use; it is safe for concurrent use.
type Metrics struct {
	mu sync.Mutex // guards everything below
	s  MetricsSnapshot
}

// MetricsSnapshot is a copy of the counters at one moment.
type MetricsSnapshot struct {
	Calls     int64 // tool calls that ended, any outcome
	Successes int64
	Errors    int64 // calls that ended with an error, timeouts included
	Timeouts  int64
	// ParallelBatches counts turns that ran more than one tool call.
	ParallelBatches int64
	// MaxConcurrency is the most tool calls of one turn seen running at once.
	MaxConcurrency int
	// WallTimeSavedMs sums, over parallel batches, the calls' own elapsed
	// times minus the batch's wall time: what running them in parallel saved.
	WallTimeSavedMs int64
	// LLMCalls counts completions requested; LLMErrors those that failed.
	LLMCalls, LLMErrors int64
	// Tools holds per-tool counters by the name the model used, for the
	// tools a turn offered; calls of names it did not offer share
	// NotOfferedTool, and names past MaxToolNames share OtherTools.
	Tools map[string]ToolStats
}

// ToolStats are the counters of one tool.
type ToolStats struct {
	Calls, Errors, Timeouts int64
	TotalMs, MaxMs          int64
}

// AvgMs is the mean latency of the tool's calls in milliseconds.
func (t ToolStats) AvgMs() float64 {
	if t.Calls == 0 {
		return 0
	}
	return float64(t.TotalMs) / float64(t.Calls)
}

// ToolNames returns the keys of Tools sorted.
func (s MetricsSnapshot) ToolNames() []string {
	names := make([]string, 0, len(s.Tools))
	for k := range s.Tools {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Snapshot returns a copy of the counters.
func (m *Metrics) Snapshot() MetricsSnapshot {
	if m == nil {
		return MetricsSnapshot{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.s
	s.Tools = make(map[string]ToolStats, len(m.s.Tools))
	for k, v := range m.s.Tools {
		s.Tools[k] = v
	}
	return s
}

// Names Metrics keeps counters under besides tools' own.
const (
	// NotOfferedTool counts the calls of names no turn offered: a model
	// can invent a new one for every call, and each was a series of its
	// own (40 chats of a model that did took /metrics to 8 MB and
	// /v1/status to 4 MB, growing for as long as the node ran).
	NotOfferedTool = "(not offered)"
	// OtherTools counts the calls of offered tools past MaxToolNames.
	OtherTools = "(other)"
	// MaxToolNames bounds the names Metrics keeps counters for (about 5
	// MB at most): every tool of a fleet of hundreds of agents, yet a
	// bound when the tools offered keep changing their names.
	MaxToolNames = 16384
)

// call counts a call of tool that ended with status; resolved says the
// turn offered a tool of that name.
func (m *Metrics) call(tool string, resolved bool, status string, et wire.ErrorType, elapsed time.Duration) {
	if m == nil {
		return
	}
	ms := elapsed.Milliseconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.s.Tools == nil {
		m.s.Tools = map[string]ToolStats{}
	}
	t, ok := m.s.Tools[tool]
	switch {
	case ok:
		// a name already counted: a repeated call refused before it
		// resolved is counted under the name it repeats
	case !resolved:
		tool = NotOfferedTool
	case len(m.s.Tools) >= MaxToolNames:
		tool = OtherTools
	}
	if !ok {
		t = m.s.Tools[tool]
	}
	m.s.Calls++
	t.Calls++
	t.TotalMs += ms
	t.MaxMs = max(t.MaxMs, ms)
	if status == wire.StatusSuccess {
		m.s.Successes++
	} else {
		m.s.Errors++
		t.Errors++
		if et == wire.ErrTimeout {
			m.s.Timeouts++
			t.Timeouts++
		}
	}
	m.s.Tools[tool] = t
}

// batch records a turn of n calls whose own times sum to sum and which took
// wall in all, with at most peak running at once.
func (m *Metrics) batch(n, peak int, sum, wall time.Duration) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s.MaxConcurrency = max(m.s.MaxConcurrency, peak)
	if n < 2 {
		return
	}
	m.s.ParallelBatches++
	if saved := (sum - wall).Milliseconds(); saved > 0 {
		m.s.WallTimeSavedMs += saved
	}
}

func (m *Metrics) llm(err error) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s.LLMCalls++
	if err != nil {
		m.s.LLMErrors++
	}
}
