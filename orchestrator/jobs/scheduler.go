package jobs

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/defaults"
	"github.com/evoclaw/evoclaw/persistence"
)

// Defaults of Options.
const (
	DefaultMaxRunning    = 4
	DefaultPoll          = time.Second
	DefaultJumpThreshold = 5 * time.Minute
	// finishTimeout bounds the write of a run's outcome.
	finishTimeout = 10 * time.Second
)

// Job sources.
const (
	SourceConfig = "config"
	SourceAPI    = "api"
	SourceModel  = "model"
)

// Errors of the scheduler.
var (
	// ErrNoJob reports an unknown job id.
	ErrNoJob = errors.New("no such job")
	// ErrConfigJob refuses to replace or remove a job declared in the
	// config file from the API (pause and resume are allowed).
	ErrConfigJob = errors.New("job is declared in the config file")
	// ErrExists refuses to add a job whose id is taken.
	ErrExists = errors.New("job exists")
	// ErrUnusable refuses to pause, resume or run a stored job whose
	// definition this build cannot schedule; it can be removed.
	ErrUnusable = errors.New("job cannot be scheduled by this build")
	// ErrStopped refuses work after Stop.
	ErrStopped = errors.New("scheduler stopped")
)

// Clock tells the time. Tests use a clock they move by hand.
type Clock interface {
	Now() time.Time
}

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now calls f.
func (f ClockFunc) Now() time.Time { return f() }

// Store keeps jobs and their runs durably (persistence/sqlite).
type Store interface {
	PutJob(ctx context.Context, j persistence.JobRecord, node, by string) (added bool, err error)
	DeleteJob(ctx context.Context, id, node, by string) error
	SetJobPaused(ctx context.Context, id string, paused bool, at time.Time, node, by string) error
	Jobs(ctx context.Context) ([]persistence.JobRecord, error)
	RecordJobRuns(ctx context.Context, jobID string, watermark time.Time, runs []persistence.JobRun) ([]bool, error)
	FinishJobRun(ctx context.Context, r persistence.JobRun) error
	JobRuns(ctx context.Context, jobID string, limit int) ([]persistence.JobRun, error)
	UnfinishedJobRuns(ctx context.Context) ([]persistence.JobRun, error)
}

// Run is one run to carry out: a conversation about one instant of a job
// (and one agent, when the job names agents).
type Run struct {
	JobID          string
	AgentID        string
	ConversationID string
	Prompt         string
	// Tools is the job's allowlist with "{agent}" replaced; empty: all.
	Tools     []string
	Scheduled time.Time
	Trigger   string
}

// Result is how a run's conversation went.
type Result struct {
	// Err is why the conversation gave no answer.
	Err error
	// TimedOut is set when the conversation ran out of time.
	TimedOut bool
	// Calls and FailedCalls count its tool calls; FirstError is the
	// first failed call's error.
	Calls, FailedCalls int
	FirstError         string
}

// Runner carries out a run: a conversation of the node (Node.Converse).
type Runner func(ctx context.Context, r Run) Result

// Options configure a Scheduler. Store and Runner are required.
type Options struct {
	Store  Store
	Runner Runner
	// Node names this node in audit records.
	Node string
	// Clock is the time source; nil means the system clock.
	Clock Clock
	// Ready, when set, is asked before a run that concerns an agent; its
	// error fails the run with that reason (an agent offline).
	Ready func(ctx context.Context, agentID string) error
	// Events, when set, records clock jumps.
	Events persistence.EventLog
	// MaxRunning bounds runs at once (default 4); an instant due beyond
	// it is recorded skipped.
	MaxRunning int
	// Poll is the interval of the background loop (default 1 s).
	Poll time.Duration
	// JumpThreshold: a clock that moved forward by more than this between
	// two ticks is logged and audited as a jump (default 5 min).
	JumpThreshold time.Duration
	Logger        *slog.Logger
	// Claim, when set, is asked for each run a tick decides (missed,
	// skipped or to start) before it is recorded: in a cluster the nodes
	// that declare a job all plan its instants, and only the node that
	// holds the run's claim records and starts it; a run another node
	// holds is neither recorded nor started here. window is the job's
	// catch-up window. An error leaves the tick's runs of the job
	// undecided: the next tick asks again.
	Claim func(ctx context.Context, job, agent string, at time.Time, window time.Duration) (bool, error)
	// Shared, when set, keeps the jobs made through the API or by the
	// model for every node of a cluster: Add, Remove, Pause and Resume
	// change them there first, and each Tick (and Open) makes this
	// node's jobs agree with it. Config jobs stay each node's own.
	Shared SharedStore
}

// entry is one job as the scheduler holds it.
type entry struct {
	job *Job
	rec persistence.JobRecord
}

// unusableJob is a stored job that cannot be scheduled: its definition as
// far as it decodes, and why.
type unusableJob struct {
	spec Spec
	rec  persistence.JobRecord
	err  error
}

// runKey names a running run's job and agent: one at a time each.
type runKey struct{ job, agent string }

// Scheduler decides and starts job runs. See the package documentation.
type Scheduler struct {
	o   Options
	log *slog.Logger

	// opMu serialises Tick, RunNow and job changes: each decides from the
	// state the previous one left.
	opMu sync.Mutex
	// mu guards jobs, running, lastNow, stopped and syncErr(At).
	mu   sync.Mutex
	jobs map[string]*entry
	// unusable are the jobs stored whose definitions this build cannot
	// schedule (a rule that came later refuses them): listed with why,
	// removable, never run.
	unusable map[string]*unusableJob
	running  map[runKey]time.Time // the scheduled instant of each running run
	lastNow  time.Time
	stopped  bool
	// syncErr and syncErrAt are the last sync failure logged, and when.
	syncErr   string
	syncErrAt time.Time

	runs     sync.WaitGroup // run goroutines
	loopDone chan struct{}  // closed when the loop returns; nil before Start
	base     context.Context
	cancel   context.CancelFunc
	stopOnce sync.Once
}

// New returns a scheduler; Open loads its jobs.
func New(o Options) (*Scheduler, error) {
	if o.Store == nil || o.Runner == nil {
		return nil, errors.New("new scheduler: a store and a runner are required")
	}
	if o.Clock == nil {
		o.Clock = ClockFunc(time.Now)
	}
	defaults.Positive(&o.MaxRunning, DefaultMaxRunning)
	defaults.Positive(&o.Poll, DefaultPoll)
	defaults.Positive(&o.JumpThreshold, DefaultJumpThreshold)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	base, cancel := context.WithCancel(context.Background())
	return &Scheduler{o: o, log: o.Logger, jobs: map[string]*entry{}, unusable: map[string]*unusableJob{}, running: map[runKey]time.Time{}, base: base, cancel: cancel}, nil
}

// Open makes the stored jobs agree with config (config jobs added,
// changed, or removed when no longer declared; their pause state and
// watermark are kept), loads every job, and ends the runs a previous
// process left unfinished as failed: they are not run again, since they
// may have acted already.
func (s *Scheduler) Open(ctx context.Context, config []Spec) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	now := s.o.Clock.Now()
	recs, err := s.o.Store.Jobs(ctx)
	if err != nil {
		return fmt.Errorf("open scheduler: %w", err)
	}
	declared := map[string]bool{}
	for _, spec := range config {
		if _, err := Compile(spec); err != nil {
			return fmt.Errorf("open scheduler: %w", err)
		}
		declared[spec.ID] = true
		b, err := json.Marshal(spec)
		if err != nil {
			return fmt.Errorf("open scheduler: encode job %q: %w", spec.ID, err)
		}
		if _, err := s.o.Store.PutJob(ctx, persistence.JobRecord{ID: spec.ID, Source: SourceConfig, Spec: b, Paused: spec.Paused,
			Created: now, Updated: now, Watermark: now}, s.o.Node, SourceConfig); err != nil {
			return fmt.Errorf("open scheduler: %w", err)
		}
	}
	for _, r := range recs {
		if r.Source == SourceConfig && !declared[r.ID] {
			if err := s.o.Store.DeleteJob(ctx, r.ID, s.o.Node, SourceConfig); err != nil {
				return fmt.Errorf("open scheduler: %w", err)
			}
		}
	}
	if recs, err = s.o.Store.Jobs(ctx); err != nil {
		return fmt.Errorf("open scheduler: %w", err)
	}
	s.mu.Lock()
	for _, r := range recs {
		var spec Spec
		job, err := func() (*Job, error) {
			if err := json.Unmarshal(r.Spec, &spec); err != nil {
				return nil, err
			}
			return Compile(spec)
		}()
		if err != nil {
			// Stored by another build, or before a rule that refuses it:
			// keep it stored and listed with why, do not run it.
			s.log.Error("stored job cannot be scheduled", "job", r.ID, "err", err)
			if spec.ID == "" {
				spec = Spec{ID: r.ID}
			}
			s.unusable[r.ID] = &unusableJob{spec: spec, rec: r, err: err}
			continue
		}
		s.jobs[r.ID] = &entry{job: job, rec: r}
	}
	s.mu.Unlock()
	s.syncLogged(ctx) // on failure the next tick tries again; the jobs stored here run meanwhile
	left, err := s.o.Store.UnfinishedJobRuns(ctx)
	if err != nil {
		return fmt.Errorf("open scheduler: %w", err)
	}
	for _, r := range left {
		r.Outcome, r.Finished, r.Node = persistence.OutcomeFailed, now, s.o.Node
		r.Error = "interrupted: the node stopped during this run; it is not run again, since it may have acted already"
		if err := s.o.Store.FinishJobRun(ctx, r); err != nil {
			return fmt.Errorf("open scheduler: %w", err)
		}
	}
	return nil
}

// Start runs Tick every Poll until Stop.
func (s *Scheduler) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loopDone != nil || s.stopped {
		return
	}
	s.loopDone = make(chan struct{})
	go func() {
		defer close(s.loopDone)
		t := time.NewTicker(s.o.Poll)
		defer t.Stop()
		var failing tickFailures
		for {
			select {
			case <-s.base.Done():
				return
			case <-t.C:
				if err := s.Tick(s.base); !errors.Is(err, ErrStopped) {
					failing.log(s.log, err, time.Now())
				}
			}
		}
	}()
}

// tickLogRepeat is how often a tick failure that persists is logged again.
const tickLogRepeat = time.Minute

// tickFailures is what the loop has logged of failing ticks; the loop's
// goroutine alone uses it. A due run that cannot be recorded (a full or
// read-only disk) fails every tick, once a second, for as long as it
// lasts: each failure was logged, 3,600 lines an hour for each due job,
// while the disk the journal may share was full.
type tickFailures struct {
	err     string    // the failure last logged; "" while ticks work
	at      time.Time // when it was logged
	failed  int       // ticks failed in a row
	repeats int       // failures like err not logged since
}

// log logs a tick's outcome: a failure unless it repeats the one logged
// less than tickLogRepeat ago (the next line counts those left out), and
// one line when ticks work again after failing.
func (f *tickFailures) log(log *slog.Logger, err error, now time.Time) {
	if err == nil {
		if f.err != "" {
			log.Info("scheduler tick: working again", "failed_ticks", f.failed)
		}
		*f = tickFailures{}
		return
	}
	f.failed++
	if err.Error() == f.err && now.Sub(f.at) < tickLogRepeat {
		f.repeats++
		return
	}
	log.Error("scheduler tick", "err", err, "repeats", f.repeats)
	f.err, f.at, f.repeats = err.Error(), now, 0
}

// Stop ends the loop, cancels the running runs (each is recorded failed
// as interrupted) and waits for them. It is idempotent.
func (s *Scheduler) Stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		done := s.loopDone
		s.mu.Unlock()
		s.cancel()
		if done != nil {
			<-done
		}
		s.opMu.Lock() // no Tick or RunNow is starting a run now
		s.opMu.Unlock()
		s.runs.Wait()
	})
}

// Wait blocks until the runs started so far have ended (tests, demos).
func (s *Scheduler) Wait() { s.runs.Wait() }

// Tick decides every job at the clock's time: claims the runs that are
// due, records the missed and skipped ones, and starts the claimed runs.
func (s *Scheduler) Tick(ctx context.Context) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.syncLogged(ctx) // on failure, plan the jobs this node has
	var errs []error
	now := s.o.Clock.Now()
	s.noteClock(ctx, now)
	for _, e := range s.snapshot() {
		if e.rec.Paused {
			continue
		}
		p := PlanAt(e.job, e.rec.Watermark, now)
		if p.Empty() {
			continue
		}
		if err := s.carryOut(ctx, e, p, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// noteClock logs and audits the clock going backwards, or forwards by more
// than JumpThreshold, between two ticks.
func (s *Scheduler) noteClock(ctx context.Context, now time.Time) {
	s.mu.Lock()
	prev := s.lastNow
	s.lastNow = now
	s.mu.Unlock()
	if prev.IsZero() {
		return
	}
	d := now.Sub(prev)
	if d >= -time.Second && d <= s.o.JumpThreshold {
		return
	}
	dir := "forward"
	if d < 0 {
		dir = "backward"
	}
	s.log.Warn("wall clock jumped", "direction", dir, "by", d.String(), "from", prev, "to", now)
	if s.o.Events != nil {
		b, _ := json.Marshal(map[string]any{"direction": dir, "by_ms": d.Milliseconds(),
			"from": prev.UTC().Format(time.RFC3339), "to": now.UTC().Format(time.RFC3339)})
		if err := s.o.Events.RecordEvent(ctx, persistence.Event{Time: now, Node: s.o.Node, Kind: persistence.EventClockJump, Detail: b}); err != nil {
			s.log.Error("audit clock jump", "err", err)
		}
	}
}

// snapshot returns the jobs sorted by id.
func (s *Scheduler) snapshot() []*entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*entry, 0, len(s.jobs))
	for _, e := range s.jobs {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rec.ID < out[j].rec.ID })
	return out
}

// carryOut records plan p of job e and starts its claimed runs.
func (s *Scheduler) carryOut(ctx context.Context, e *entry, p Plan, now time.Time) error {
	agents := e.job.Agents
	if len(agents) == 0 {
		agents = []string{""}
	}
	var runs []persistence.JobRun
	for i, at := range p.Missed {
		why := fmt.Sprintf("missed: the instant passed while the node was down or its clock jumped, and %s late is beyond the job's window of %s",
			now.Sub(at).Round(time.Second), e.job.window)
		if !p.Fire.IsZero() {
			why = "missed: the instant passed while the node was down or its clock jumped; the newest instant of the gap ran instead"
		}
		for _, a := range agents {
			r := persistence.JobRun{JobID: e.rec.ID, Scheduled: at, AgentID: a, Trigger: persistence.TriggerCatchUp,
				Outcome: persistence.OutcomeMissed, Finished: now, Error: why, Node: s.o.Node}
			if i == 0 {
				r.Missed = p.MissedBefore
			}
			runs = append(runs, r)
		}
	}
	var start []int // indexes in runs of the runs to start if claimed
	if !p.Fire.IsZero() {
		for _, a := range agents {
			r, ok := s.reserve(e, a, p.Fire, p.Trigger, now)
			if ok {
				start = append(start, len(runs))
			}
			runs = append(runs, r)
		}
	}
	runs, start, err := s.claim(ctx, e, runs, start)
	if err != nil {
		return err
	}
	claimed, err := s.o.Store.RecordJobRuns(ctx, e.rec.ID, p.Watermark, runs)
	if err != nil {
		for _, i := range start {
			s.release(e.rec.ID, runs[i].AgentID)
		}
		return fmt.Errorf("job %q: %w", e.rec.ID, err)
	}
	s.mu.Lock()
	if p.Watermark.After(e.rec.Watermark) {
		e.rec.Watermark = p.Watermark
	}
	s.mu.Unlock()
	for _, i := range start {
		if !claimed[i] {
			s.release(e.rec.ID, runs[i].AgentID) // decided before: never again
			continue
		}
		s.launch(e.job, runs[i])
	}
	return nil
}

// claim keeps the runs this node holds the claim of (Options.Claim; all
// of them without it) and the indexes, among those kept, of the runs to
// start; the reserved runs it drops are released.
func (s *Scheduler) claim(ctx context.Context, e *entry, runs []persistence.JobRun, start []int) ([]persistence.JobRun, []int, error) {
	if s.o.Claim == nil {
		return runs, start, nil
	}
	toStart := map[int]bool{}
	for _, i := range start {
		toStart[i] = true
	}
	var kept []persistence.JobRun
	var keptStart []int
	for i, r := range runs {
		held, err := s.o.Claim(ctx, e.rec.ID, r.AgentID, r.Scheduled, e.job.window)
		if err != nil {
			for j := i; j < len(runs); j++ {
				if toStart[j] {
					s.release(e.rec.ID, runs[j].AgentID)
				}
			}
			for _, j := range keptStart {
				s.release(e.rec.ID, kept[j].AgentID)
			}
			return nil, nil, fmt.Errorf("job %q: %w", e.rec.ID, err)
		}
		if !held {
			if toStart[i] {
				s.release(e.rec.ID, r.AgentID) // another node runs it
			}
			continue
		}
		if toStart[i] {
			keptStart = append(keptStart, len(kept))
		}
		kept = append(kept, r)
	}
	return kept, keptStart, nil
}

// reserve marks job e's run for agent as running, or returns it as a
// skipped run when one is still running or MaxRunning are.
func (s *Scheduler) reserve(e *entry, agent string, at time.Time, trigger string, now time.Time) (persistence.JobRun, bool) {
	r := persistence.JobRun{JobID: e.rec.ID, Scheduled: at, AgentID: agent, Trigger: trigger, Node: s.o.Node}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := runKey{e.rec.ID, agent}
	if prev, busy := s.running[k]; busy {
		r.Outcome, r.Finished = persistence.OutcomeSkipped, now
		r.Error = fmt.Sprintf("skipped: the run scheduled at %s is still running", prev.UTC().Format(time.RFC3339))
		return r, false
	}
	if len(s.running) >= s.o.MaxRunning {
		r.Outcome, r.Finished = persistence.OutcomeSkipped, now
		r.Error = fmt.Sprintf("skipped: %d job runs are running, the most at once", len(s.running))
		return r, false
	}
	s.running[k] = at
	r.Started = now
	r.ConversationID = conversationID(e.rec.ID, at, agent)
	return r, true
}

func (s *Scheduler) release(job, agent string) {
	s.mu.Lock()
	delete(s.running, runKey{job, agent})
	s.mu.Unlock()
}

// conversationID names a run's conversation: the same run always gets
// the same id, and ids fit the conversation id rule (48 characters).
func conversationID(job string, at time.Time, agent string) string {
	h := sha256.Sum256([]byte(job + "\x00" + strconv.FormatInt(at.UnixMilli(), 10) + "\x00" + agent))
	return "job-" + hex.EncodeToString(h[:12])
}

// launch runs r in a goroutine the scheduler owns.
func (s *Scheduler) launch(job *Job, r persistence.JobRun) {
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		defer s.release(r.JobID, r.AgentID)
		r.Outcome, r.Error = s.execute(job, r)
		r.Finished = s.o.Clock.Now()
		ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
		defer cancel()
		if err := s.o.Store.FinishJobRun(ctx, r); err != nil {
			// The run stays unfinished in the store; the next start ends
			// it as interrupted. Loud: its outcome is lost.
			s.log.Error("record job run outcome", "job", r.JobID, "agent", r.AgentID, "outcome", r.Outcome, "err", err)
		}
	}()
}

// execute carries out one run and classifies how it ended.
func (s *Scheduler) execute(job *Job, r persistence.JobRun) (outcome, why string) {
	ctx, cancel := context.WithTimeout(s.base, job.timeout)
	defer cancel()
	if r.AgentID != "" && s.o.Ready != nil {
		if err := s.o.Ready(ctx, r.AgentID); err != nil {
			if s.base.Err() != nil {
				return persistence.OutcomeFailed, "interrupted: the node stopped before the run started"
			}
			return persistence.OutcomeFailed, err.Error()
		}
	}
	tools := slices.Clone(job.Tools)
	for i, t := range tools {
		tools[i] = replaceAgent(t, r.AgentID)
	}
	res := s.o.Runner(ctx, Run{JobID: r.JobID, AgentID: r.AgentID, ConversationID: r.ConversationID, Prompt: job.Prompt,
		Tools: tools, Scheduled: r.Scheduled, Trigger: r.Trigger})
	switch {
	case s.base.Err() != nil:
		return persistence.OutcomeFailed, "interrupted: the node stopped during the run"
	case res.TimedOut || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return persistence.OutcomeTimedOut, fmt.Sprintf("timed out: no answer within the job's %s", job.timeout)
	case res.Err != nil:
		return persistence.OutcomeFailed, res.Err.Error()
	case res.Calls > 0 && res.FailedCalls == res.Calls:
		return persistence.OutcomeFailed, fmt.Sprintf("every tool call of the run failed (%d); the first: %s", res.Calls, res.FirstError)
	}
	return persistence.OutcomeSucceeded, ""
}

// replaceAgent substitutes {agent} in a tool pattern.
func replaceAgent(pattern, agent string) string {
	return strings.ReplaceAll(pattern, "{agent}", agent)
}
