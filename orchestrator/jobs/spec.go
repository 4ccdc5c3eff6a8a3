package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// Missed-run policies of a job.
const (
	// MissedCatchUp runs the latest instant that passed while the node was
	// down (or the clock jumped) if it is at most CatchUpWindow old; every
	// other passed instant is recorded as missed.
	MissedCatchUp = "catch_up"
	// MissedSkip runs an instant only within SkipGrace of it; a later one
	// is recorded as missed.
	MissedSkip = "skip"
)

// Defaults and bounds of a Spec.
const (
	DefaultTimeout       = 10 * time.Minute
	MaxTimeout           = 24 * time.Hour
	DefaultCatchUpWindow = time.Hour
	// SkipGrace is how late a run of a MissedSkip job may still start: a
	// slow tick or a busy node is not a missed run.
	SkipGrace = time.Minute
	// MinInterval is the shortest schedule: cron's resolution is a minute,
	// and an interval below it would be a busy loop on a Pi.
	MinInterval = time.Minute
	// MaxAgents bounds the agents of one job (one run each per instant).
	MaxAgents = 64
	// MaxTools bounds a job's tool allowlist.
	MaxTools = 64
	// MaxPrompt bounds a job's prompt, in bytes.
	MaxPrompt = 16 << 10
	// maxSpecBytes bounds an encoded Spec (API bodies).
	maxSpecBytes = 64 << 10
)

// ErrInvalidSpec reports a job definition that cannot be scheduled.
var ErrInvalidSpec = errors.New("invalid job")

// SpecShape is the JSON object a job definition is.
const SpecShape = `{"id", "schedule", "prompt", "agents", "tools", "timeout", "missed", "catch_up_window"}`

// Spec is a job as declared: in evoclaw.toml ([[jobs]]), over the API, or
// by the model's schedule_task tool. Stored as JSON.
type Spec struct {
	// ID names the job: letters, digits, '-' and '_', at most 40.
	ID string `json:"id" toml:"id"`
	// Schedule is a cron expression of five fields ("0 6 * * *"), a
	// descriptor (@hourly, @daily, @weekly, @monthly), or "@every 15m".
	// A "CRON_TZ=Europe/Berlin " prefix picks the time zone; the default
	// is the node's local time.
	Schedule string `json:"schedule" toml:"schedule"`
	// Prompt is what the run asks the model.
	Prompt string `json:"prompt" toml:"prompt"`
	// Agents are the edge agents the job concerns: each instant runs once
	// per agent, in its own conversation, offered that agent's tools only.
	// Empty: one run, with every tool.
	Agents []string `json:"agents,omitempty" toml:"agents"`
	// Tools, when set, is the only tools the run's model sees and may
	// call: model-visible names or patterns (path.Match: "*__read_temp";
	// "{agent}" stands for the run's agent: "{agent}__read_temp").
	Tools []string `json:"tools,omitempty" toml:"tools"`
	// Timeout bounds one run ("10m"; default DefaultTimeout).
	Timeout string `json:"timeout,omitempty" toml:"timeout"`
	// Missed is MissedCatchUp (default) or MissedSkip.
	Missed string `json:"missed,omitempty" toml:"missed"`
	// CatchUpWindow is how late a MissedCatchUp run may start ("1h",
	// default DefaultCatchUpWindow).
	CatchUpWindow string `json:"catch_up_window,omitempty" toml:"catch_up_window"`
	// Paused, in the config file, declares the job paused when it is first
	// stored; afterwards pause and resume are the operators'.
	Paused bool `json:"paused,omitempty" toml:"paused"`
}

// Job is a validated Spec with its schedule parsed.
type Job struct {
	Spec
	sched   cron.Schedule
	timeout time.Duration
	window  time.Duration
}

// Timeout is the bound of one run.
func (j *Job) Timeout() time.Duration { return j.timeout }

// Window is how late a run may start before it counts as missed.
func (j *Job) Window() time.Duration { return j.window }

// Next is the first scheduled instant after t.
func (j *Job) Next(t time.Time) time.Time { return j.sched.Next(t) }

// idPattern is a job id. The patterns compile on first use: a counted
// repetition compiles to one instruction per count, a thousand
// allocations every process would make at start-up.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`) })

// agentPattern is wire's agent id rule, repeated to keep this package
// free of the wire protocol.
var agentPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,48}$`) })

// parser reads standard five-field cron expressions and descriptors.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a job's schedule (see Spec.Schedule).
func ParseSchedule(s string) (cron.Schedule, error) {
	sched, err := parseSchedule(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	return sched, nil
}

// parseSchedule is ParseSchedule; its errors are FieldErrors of
// "schedule", without ErrInvalidSpec.
func parseSchedule(s string) (cron.Schedule, error) {
	bad := func(format string, args ...any) error {
		return &FieldError{Field: "schedule", Err: fmt.Errorf(format, args...)}
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, bad("schedule: required")
	}
	if len(s) > 200 {
		return nil, bad("schedule: longer than 200 bytes")
	}
	// The library reads a zone prefix before any schedule, @every too,
	// which it would run at its own interval, below a minute as well.
	zone, expr := cutZone(s)
	if zone != "" {
		if _, err := time.LoadLocation(zone); err != nil {
			return nil, bad("schedule %q: time zone %q: %v", s, zone, err)
		}
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, bad("schedule %q: %v", s, err)
		}
		if d < MinInterval || d%time.Second != 0 {
			return nil, bad("schedule %q: the interval must be whole seconds and at least %s", s, MinInterval)
		}
		return every{d}, nil
	}
	if err := checkSteps(expr); err != nil {
		return nil, bad("schedule %q: %v", s, err)
	}
	sched, err := parseCron(s)
	if err != nil {
		return nil, bad("schedule %q: %v (want 5 fields \"MIN HOUR DOM MON DOW\", @daily, or \"@every 15m\")", s, err)
	}
	if _, ok := sched.(cron.ConstantDelaySchedule); ok { // an @every that the checks above did not see
		return nil, bad("schedule %q: write @every first, or alone", s)
	}
	// An expression no date satisfies (30 2 31 2 *) yields a zero Next.
	if sched.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, bad("schedule %q never fires", s)
	}
	return dstSafe(sched), nil
}

// cutZone splits a "CRON_TZ=Zone " or "TZ=Zone " prefix, as the
// library reads it, from the schedule after it.
func cutZone(s string) (zone, expr string) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			zone, expr, _ = strings.Cut(rest, " ")
			return zone, strings.TrimSpace(expr)
		}
	}
	return "", s
}

// fieldRanges are the values of the five fields of a cron expression,
// and the names the library reads for months and weekdays.
var fieldRanges = [5]struct {
	name     string
	min, max int
	names    []string
}{
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day of month", 1, 31, nil},
	{"month", 1, 12, []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{"day of week", 0, 6, []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// checkSteps refuses a step larger than the range it divides ("*/90" of
// the minutes), which the library reads as the range's first value alone:
// "*/100000 * * * *" would run every hour, not as rarely as it says.
// What it cannot read it leaves to the library, which reports it.
func checkSteps(expr string) error {
	fields := strings.Fields(expr)
	if len(fields) != len(fieldRanges) {
		return nil
	}
	for i, field := range fields {
		fr := fieldRanges[i]
		for part := range strings.SplitSeq(field, ",") {
			rng, stepText, ok := strings.Cut(part, "/")
			if !ok {
				continue
			}
			step, err := strconv.Atoi(stepText)
			if err != nil || step <= 0 {
				continue
			}
			lo, hi := fr.min, fr.max
			if rng != "*" && rng != "?" {
				a, b, isRange := strings.Cut(rng, "-")
				if lo, ok = fieldValue(a, fr.names, fr.min); !ok {
					continue
				}
				if isRange {
					if hi, ok = fieldValue(b, fr.names, fr.min); !ok {
						continue
					}
				}
			}
			if hi >= lo && step > hi-lo {
				return fmt.Errorf("the step %d of %q (%s) is larger than its range %d-%d, so it would only match %d; write %d, or a shorter step",
					step, part, fr.name, lo, hi, lo, lo)
			}
		}
	}
	return nil
}

// fieldValue reads one value of a field: a number or one of names, the
// first of which stands for min.
func fieldValue(s string, names []string, min int) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, true
	}
	if i := slices.Index(names, strings.ToLower(s)); i >= 0 {
		return min + i, true
	}
	return 0, false
}

// FieldError is a refused job definition that names the field at fault
// (id, schedule, prompt, agents, tools, timeout, missed, catch_up_window).
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Field is the field the first refusal in err names, or "".
func Field(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// parseCron calls the library's parser, turning a panic on input it did
// not expect into an error: the schedule comes from outside.
func parseCron(s string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("unparseable: %v", r)
		}
	}()
	return parser.Parse(s)
}

// every fires at whole multiples of d since Go's zero time, so that its
// instants do not depend on when the node started or the job was stored:
// a restart or a clock jump finds the same instants again.
type every struct{ d time.Duration }

func (e every) Next(t time.Time) time.Time {
	n := t.Truncate(e.d).Add(e.d)
	return n.In(t.Location())
}

// Compile validates s and parses its schedule.
func Compile(s Spec) (*Job, error) {
	var errs []error
	// bad records a refusal of the field format's first word names.
	bad := func(format string, args ...any) {
		field, _, _ := strings.Cut(format, " ")
		errs = append(errs, &FieldError{Field: strings.TrimSuffix(field, ":"), Err: fmt.Errorf(format, args...)})
	}
	if !idPattern().MatchString(s.ID) {
		bad("id %.60q: use letters, digits, '-' and '_', at most 40", s.ID)
	}
	sched, err := parseSchedule(s.Schedule)
	if err != nil {
		errs = append(errs, err)
	}
	if strings.TrimSpace(s.Prompt) == "" {
		bad("prompt: required")
	} else if len(s.Prompt) > MaxPrompt {
		bad("prompt: longer than %d bytes", MaxPrompt)
	}
	if len(s.Agents) > MaxAgents {
		bad("agents: more than %d", MaxAgents)
	}
	seen := map[string]bool{}
	for _, a := range s.Agents {
		if !agentPattern().MatchString(a) {
			bad("agents: %.60q is not an agent id", a)
		}
		if seen[a] {
			bad("agents: %q twice", a)
		}
		seen[a] = true
	}
	if len(s.Tools) > MaxTools {
		bad("tools: more than %d", MaxTools)
	}
	for _, t := range s.Tools {
		if t == "" || len(t) > 200 {
			bad("tools: empty or longer than 200 bytes")
		}
	}
	j := &Job{Spec: s, sched: sched, timeout: DefaultTimeout, window: DefaultCatchUpWindow}
	if s.Timeout != "" {
		if d, err := time.ParseDuration(s.Timeout); err != nil || d <= 0 || d > MaxTimeout {
			bad("timeout %.40q: want a duration such as 10m, at most %s", s.Timeout, MaxTimeout)
		} else {
			j.timeout = d
		}
	}
	switch s.Missed {
	case "", MissedCatchUp:
		j.Missed = MissedCatchUp
		if s.CatchUpWindow != "" {
			if d, err := time.ParseDuration(s.CatchUpWindow); err != nil || d < 0 {
				bad("catch_up_window %.40q: want a duration such as 1h", s.CatchUpWindow)
			} else {
				j.window = max(d, SkipGrace)
			}
		}
	case MissedSkip:
		if s.CatchUpWindow != "" {
			bad("catch_up_window: only with missed = %q", MissedCatchUp)
		}
		j.window = SkipGrace
	default:
		bad("missed %.40q: want %q or %q", s.Missed, MissedCatchUp, MissedSkip)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrInvalidSpec, s.ID, err)
	}
	return j, nil
}

// DecodeSpec parses a job definition sent over the API or by the model:
// one JSON object, unknown fields refused.
func DecodeSpec(b []byte) (*Job, error) {
	if len(b) > maxSpecBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalidSpec, maxSpecBytes)
	}
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: want %s: %v", ErrInvalidSpec, SpecShape, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidSpec)
	}
	return Compile(s)
}
