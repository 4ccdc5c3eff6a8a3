package persistence

import (
	"encoding/json"
	"time"
)

// Event kinds of scheduled jobs and approvals. Their detail is JSON; the
// fields are listed in docs/AUDIT.md.
const (
	// EventJobRun records how one run of a scheduled job ended (outcome
	// succeeded, failed, timed_out, skipped or missed): one per job,
	// scheduled instant and agent.
	EventJobRun = "job_run"
	// EventJobRunsSkipped records, in one event, the skipped runs of a
	// job that were counted rather than recorded one by one (detail.skipped,
	// first and last scheduled instant): see sqlite.SkipSummaryWindow.
	EventJobRunsSkipped = "job_runs_skipped"
	// EventJobRunStarted records that a run was claimed and started.
	EventJobRunStarted = "job_run_started"
	// EventJobChanged records a job added, changed, removed, paused or
	// resumed (detail.change).
	EventJobChanged = "job_changed"
	// EventApprovalRequested records a tool call waiting for a person.
	EventApprovalRequested = "approval_requested"
	// EventApprovalDecided records the decision (approved, denied,
	// timed_out, canceled) and who made it.
	EventApprovalDecided = "approval_decided"
	// EventClockJump records the wall clock going backwards, or forwards
	// by much more than the scheduler's poll interval.
	EventClockJump = "clock_jump"
)

// Outcomes of a job run.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeTimedOut  = "timed_out"
	OutcomeSkipped   = "skipped"
	OutcomeMissed    = "missed"
)

// Triggers of a job run: why it ran.
const (
	TriggerSchedule = "schedule" // its instant came while the node ran
	TriggerCatchUp  = "catch_up" // its instant passed while the node was down or the clock jumped
	TriggerRunNow   = "run_now"  // an operator asked
)

// JobRecord is a scheduled job as stored: its definition (Spec, JSON owned
// by the scheduler) and its scheduling state.
type JobRecord struct {
	ID string
	// Source is "config", "api" or "model": who declared it.
	Source string
	Spec   json.RawMessage
	Paused bool
	// Created and Updated are when the job was first stored and last changed.
	Created, Updated time.Time
	// Watermark is the latest scheduled instant already decided (claimed,
	// recorded missed or skipped); the next run is the first instant after
	// it. Zero means none yet.
	Watermark time.Time
}

// JobRun is one run of a job: one scheduled instant for one agent.
type JobRun struct {
	JobID     string
	Scheduled time.Time
	// AgentID is the edge agent the run concerns; empty for a job that
	// names none.
	AgentID string
	// Trigger is TriggerSchedule, TriggerCatchUp or TriggerRunNow.
	Trigger string
	// Outcome is empty while the run runs, then one of the Outcome*
	// constants.
	Outcome        string
	ConversationID string
	Started        time.Time
	Finished       time.Time
	// Error says why a run did not succeed (or what a missed or skipped
	// run's note is).
	Error string
	// Missed counts further instants this missed record stands for (a
	// long gap is recorded as its latest instants plus a count).
	Missed int64
	// Node names the node in the audit event.
	Node string
}

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalTimedOut = "timed_out"
	ApprovalCanceled = "canceled"
)

// Approval is one tool call that waits, or waited, for a person.
type Approval struct {
	ID             string    `json:"id"`
	State          string    `json:"state"`
	ConversationID string    `json:"conversation_id,omitempty"`
	RequestID      string    `json:"request_id,omitempty"`
	AgentID        string    `json:"agent_id,omitempty"`
	Tool           string    `json:"tool"`
	Params         string    `json:"params,omitempty"` // JSON, cut to a few KiB
	Reason         string    `json:"reason"`           // which rule asks for approval
	Requested      time.Time `json:"requested"`
	Expires        time.Time `json:"expires"`
	Decided        time.Time `json:"decided,omitzero"`
	DecidedBy      string    `json:"decided_by,omitempty"`
	Note           string    `json:"note,omitempty"`
	// Node names the node in the audit events.
	Node string `json:"node"`
}
