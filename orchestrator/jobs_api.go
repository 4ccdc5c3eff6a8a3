package orchestrator

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/jobs"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// maxJobBody bounds a POST /v1/jobs body.
const maxJobBody = 64 << 10

// maxRunsLimit bounds GET /v1/runs?limit=, as maxApprovalsLimit bounds
// approvals: four jobs' whole kept history. The bound was every run a
// node keeps (128,000): one such answer was 22 MB and took the node's
// private memory from 10 to 200 MB, eight at once to 385 MB.
const maxRunsLimit = 2000

// JobsPage is what GET /v1/jobs answers.
type JobsPage struct {
	Jobs []jobs.Info `json:"jobs"`
}

// RunView is one job run as the API shows it.
type RunView struct {
	Job            string    `json:"job"`
	Scheduled      time.Time `json:"scheduled"`
	Agent          string    `json:"agent,omitempty"`
	Trigger        string    `json:"trigger"`
	Outcome        string    `json:"outcome,omitempty"` // empty while it runs
	ConversationID string    `json:"conversation_id,omitempty"`
	Started        time.Time `json:"started,omitzero"`
	Finished       time.Time `json:"finished,omitzero"`
	Error          string    `json:"error,omitempty"`
	MissedBefore   int64     `json:"missed_before,omitempty"`
}

// RunsPage is what GET /v1/runs and POST /v1/jobs/{id}/run answer.
type RunsPage struct {
	Runs []RunView `json:"runs"`
}

func runViews(runs []persistence.JobRun) RunsPage {
	out := RunsPage{Runs: []RunView{}}
	for _, r := range runs {
		out.Runs = append(out.Runs, RunView{Job: r.JobID, Scheduled: r.Scheduled.UTC(), Agent: r.AgentID, Trigger: r.Trigger,
			Outcome: r.Outcome, ConversationID: r.ConversationID, Started: r.Started.UTC(), Finished: r.Finished.UTC(),
			Error: r.Error, MissedBefore: r.Missed})
	}
	return out
}

// jobError answers a scheduler error of request r with its status: 503
// when the store cannot take it (storeUnavailable), the message bounded
// by echoed.
func jobError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case storeUnavailable(w, err):
	case errors.Is(err, jobs.ErrNoJob), errors.Is(err, sqlite.ErrNoJob):
		echoError(w, r, http.StatusNotFound, err)
	case errors.Is(err, jobs.ErrInvalidSpec):
		writeAPIErrorParam(w, http.StatusBadRequest, jobs.Field(err), echoed(r, err.Error()))
	case errors.Is(err, jobs.ErrExists), errors.Is(err, jobs.ErrConfigJob), errors.Is(err, jobs.ErrUnusable), errors.Is(err, sqlite.ErrTooManyJobs):
		echoError(w, r, http.StatusConflict, err)
	case errors.Is(err, jobs.ErrStopped):
		echoError(w, r, http.StatusServiceUnavailable, err)
	default:
		echoError(w, r, http.StatusInternalServerError, err)
	}
}

// handleJobs lists every job as a JobsPage, written a job at a time: 256
// jobs of the largest definition are 8 MB of JSON, and encoded whole for
// each of 64 requests at once they took the node to 540 MB.
func (n *Node) handleJobs(w http.ResponseWriter, _ *http.Request) {
	writeJSONList(w, "jobs", n.sched.List())
}

// writeJSONList answers 200 with {"KEY": [ITEM, ...]}, as writeJSON would
// encode it, but marshals and writes one item at a time, so that a
// request holds one item's JSON rather than the whole answer's.
func writeJSONList[T any](w http.ResponseWriter, key string, items []T) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	k, _ := json.Marshal(key) // a string: cannot fail
	sep := []byte("{" + string(k) + ":[")
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return // a bug; the client gets JSON cut short rather than a wrong answer
		}
		if _, err := w.Write(append(sep, b...)); err != nil {
			return // the client is gone
		}
		sep = []byte(",")
	}
	if len(items) == 0 {
		_, _ = w.Write(sep) // the client may be gone; nothing to do
	}
	_, _ = w.Write([]byte("]}\n"))
}

func (n *Node) handleJob(w http.ResponseWriter, r *http.Request) {
	in, err := n.sched.Get(r.PathValue("id"))
	if err != nil {
		jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, in)
}

// handleAddJob creates a job from a Spec body; ?by= names who (default
// "api").
func (n *Node) handleAddJob(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, maxJobBody)
	if !ok {
		return
	}
	var spec jobs.Spec
	if err := decodeStrict(body, &spec, jobs.SpecShape); err != nil {
		refuseRequest(w, err)
		return
	}
	j, err := jobs.Compile(spec)
	if err != nil {
		jobError(w, r, err)
		return
	}
	// The job as added, not as a Get would find it: a DELETE a moment
	// later made that a 404 for a job this request created.
	by, err := byOf(r)
	if err != nil {
		refuseRequest(w, err)
		return
	}
	in, err := n.sched.Add(r.Context(), j, jobs.SourceAPI, by)
	if err != nil {
		jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, in)
}

func (n *Node) handleRemoveJob(w http.ResponseWriter, r *http.Request) {
	by, err := byOf(r)
	if err != nil {
		refuseRequest(w, err)
		return
	}
	if err := n.sched.Remove(r.Context(), r.PathValue("id"), by); err != nil {
		jobError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (n *Node) handlePauseJob(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		set := n.sched.Resume
		if pause {
			set = n.sched.Pause
		}
		// The job as changed, not read back: a DELETE in between turned a
		// pause that took effect into a 404.
		by, err := byOf(r)
		if err != nil {
			refuseRequest(w, err)
			return
		}
		in, err := set(r.Context(), id, by)
		if err != nil {
			jobError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, in)
	}
}

func (n *Node) handleRunJob(w http.ResponseWriter, r *http.Request) {
	runs, err := n.sched.RunNow(r.Context(), r.PathValue("id"))
	if err != nil {
		jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, runViews(runs))
}

// handleRuns serves the run history: ?job=ID&limit=N (default 50, at
// most maxRunsLimit).
func (n *Node) handleRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > maxRunsLimit {
			badLimit(w, maxRunsLimit)
			return
		}
	}
	runs, err := n.sched.History(r.Context(), q.Get("job"), limit)
	if err != nil {
		jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, runViews(runs))
}

// byOf is who a job change is recorded as: ?by=NAME, else "api". A name
// checkBy refuses is an error, answered 400: taken as "api" before, a long
// name was dropped without a word, and one with a newline was kept.
func byOf(r *http.Request) (string, error) {
	by := strings.TrimSpace(r.URL.Query().Get("by"))
	if by == "" {
		return "api", nil
	}
	return by, checkBy(by)
}
