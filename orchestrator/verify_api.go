package orchestrator

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// AuditVerifyTimeout bounds one verification of the warm chain, which
// reads every record.
const AuditVerifyTimeout = 60 * time.Second

// VerifyResult is what GET and POST /v1/audit/verify answer: the outcome
// of verifying the warm audit chain (as `evoclaw audit verify` does), and
// when it ran.
type VerifyResult struct {
	// OK is true when the chain verified; Error says why not.
	OK        bool      `json:"ok"`
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
	ElapsedMS int64     `json:"elapsed_ms"`
	ChainID   string    `json:"chain_id,omitempty"`
	// StartSeq is where verification started (a retention checkpoint; 0
	// is the genesis), HeadSeq and HeadHash the last record verified.
	StartSeq  int64  `json:"start_seq"`
	Verified  int64  `json:"verified"`
	HeadSeq   int64  `json:"head_seq"`
	HeadHash  string `json:"head_hash,omitempty"`
	Unchained int64  `json:"unchained"`
	// KeyID names the key that authenticated the chain's start and head;
	// empty when they were not authenticated.
	KeyID string `json:"key_id,omitempty"`
	// Broken names the first record that does not verify.
	Broken *BrokenRecord `json:"broken,omitempty"`
}

// BrokenRecord is where a chain breaks.
type BrokenRecord struct {
	Kind     string `json:"kind"`
	Table    string `json:"table"`
	RecordID string `json:"record_id"`
	Seq      int64  `json:"seq"`
}

// verifier runs one verification at a time and keeps the last result.
// It owns the goroutine of the run in progress: close cancels it and waits.
type verifier struct {
	run func(ctx context.Context) VerifyResult
	// stop ends the run in progress at close; wg waits for it.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex    // guards the fields below
	last    *VerifyResult // nil before the first run
	running chan struct{} // closed when the run in progress ends; nil when none runs
}

func newVerifier(run func(ctx context.Context) VerifyResult) *verifier {
	ctx, stop := context.WithCancel(context.Background())
	return &verifier{run: run, ctx: ctx, stop: stop}
}

// close cancels the run in progress and waits for it; runs asked for later
// fail at once (their context is done).
func (v *verifier) close() {
	v.stop()
	v.wg.Wait()
}

// latest returns the last result, running one when there is none.
func (v *verifier) latest(ctx context.Context) (VerifyResult, error) {
	v.mu.Lock()
	last := v.last
	v.mu.Unlock()
	if last != nil {
		return *last, nil
	}
	return v.rerun(ctx)
}

// rerun verifies now, or joins the verification in progress, and returns
// its result; ctx only ends the wait (the run, bounded by
// AuditVerifyTimeout, finishes for the next caller).
func (v *verifier) rerun(ctx context.Context) (VerifyResult, error) {
	v.mu.Lock()
	done := v.running
	if done == nil {
		done = make(chan struct{})
		v.running = done
		v.wg.Add(1)
		go func() {
			defer v.wg.Done()
			res := v.run(v.ctx)
			v.mu.Lock()
			v.last, v.running = &res, nil
			v.mu.Unlock()
			close(done)
		}()
	}
	v.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return VerifyResult{}, ctx.Err()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return *v.last, nil
}

// verifyWarm verifies the node's warm chain with the key beside it.
func (n *Node) verifyWarm(ctx context.Context) VerifyResult {
	ctx, cancel := context.WithTimeout(ctx, AuditVerifyTimeout)
	defer cancel()
	start := n.now()
	rep, err := sqlite.VerifyChainWith(ctx, n.AuditPath(), sqlite.VerifyOptions{})
	res := VerifyResult{OK: err == nil, CheckedAt: start, ElapsedMS: n.now().Sub(start).Milliseconds()}
	if rep != nil {
		res.ChainID, res.StartSeq, res.Verified, res.HeadSeq = auditchain.Printable(rep.ChainID), rep.StartSeq, rep.Verified, rep.HeadSeq
		res.HeadHash, res.Unchained, res.KeyID = rep.HeadHash, rep.Unchained, rep.KeyID
	}
	if err != nil {
		res.Error = err.Error()
		var be *auditchain.BreakError
		if errors.As(err, &be) {
			res.Broken = &BrokenRecord{Kind: be.Kind, Table: auditchain.Printable(be.Table), RecordID: auditchain.Printable(be.RecordID), Seq: be.Seq}
		}
	}
	return res
}

// handleVerify answers the last verification (GET; the first GET runs
// one) or a new one (POST).
func (n *Node) handleVerify(w http.ResponseWriter, r *http.Request) {
	get := n.verify.latest
	if r.Method == http.MethodPost {
		get = n.verify.rerun
	}
	res, err := get(r.Context())
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, "verify audit chain: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, res)
}
