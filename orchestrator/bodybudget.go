package orchestrator

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// smallBody is the largest body read without a share of the body budget:
// 512 connections of such bodies hold 32 MiB at most, and approvals,
// replies, jobs and most chats stay clear of a budget taken by large ones.
const smallBody = 64 << 10

// bodyBudget bounds the bytes of request bodies over smallBody that
// handlers read and decode at once (httpLimits.BodyBytes). A 4 MiB chat completion
// costs the node 11-16 MB while it is read and decoded (the bytes, the
// buffer's growth, the decoded strings): 100 of them sent at once took a
// node from 40 MB to 1.1 GB, and the 512 connections the API allows would
// take more than a Pi has. A body waits for its share at most
// httpLimits.BodyWait, then is refused 429. A handler gives its share back
// once the body is decoded (bodyDecoded) or when it returns: a chat that
// then waits minutes for a model or an approval holds what it decoded,
// not a share that would keep other bodies out.
type bodyBudget struct {
	wait time.Duration
	most int64
	// mu guards free and freed.
	mu    sync.Mutex
	free  int64
	freed chan struct{} // closed and replaced at each release
}

func newBodyBudget(bytes int64, wait time.Duration) *bodyBudget {
	return &bodyBudget{wait: wait, most: bytes, free: bytes, freed: make(chan struct{})}
}

// acquire takes n bytes of the budget, waiting until they are free or ctx
// ends.
func (b *bodyBudget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tryAcquire takes n bytes of the budget when they are free now.
func (b *bodyBudget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.free < n {
		return false
	}
	b.free -= n
	return true
}

// release gives n bytes back and wakes those waiting.
func (b *bodyBudget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	close(b.freed)
	b.freed = make(chan struct{})
}

// bodyShare is a request's share of a bodyBudget: n bytes once reserved,
// given back once.
type bodyShare struct {
	budget *bodyBudget
	n      int64
	once   sync.Once
}

func (s *bodyShare) release() {
	if s.n > 0 {
		s.once.Do(func() { s.budget.release(s.n) })
	}
}

// bodyShareKey is the request context's key of its *bodyShare.
type bodyShareKey struct{}

// withBodyBudget is r with a share of b in its context when its body may
// need one (over smallBody, or of unknown length).
func withBodyBudget(r *http.Request, b *bodyBudget) *http.Request {
	if b == nil || r.ContentLength >= 0 && r.ContentLength <= smallBody {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), bodyShareKey{}, &bodyShare{budget: b}))
}

// bodyDecoded gives back r's share of the body budget: its handler holds
// no more of the body than what it decoded.
func bodyDecoded(r *http.Request) {
	if s, ok := r.Context().Value(bodyShareKey{}).(*bodyShare); ok {
		s.release()
	}
}

// reserveBody takes the share of the body budget that r's body, read up
// to limit bytes, needs (its Content-Length, else limit), until
// bodyDecoded or the handler's return; it answers 429 itself and reports
// false when none is free within the budget's wait.
func reserveBody(w http.ResponseWriter, r *http.Request, limit int64) bool {
	s, _ := r.Context().Value(bodyShareKey{}).(*bodyShare)
	n := limit
	if r.ContentLength >= 0 {
		n = min(r.ContentLength, limit)
	}
	if s == nil || n <= smallBody {
		return true
	}
	b := s.budget
	ctx, cancel := context.WithTimeout(r.Context(), b.wait)
	defer cancel()
	if err := b.acquire(ctx, n); err != nil {
		w.Header().Set("Connection", "close") // the body is not read
		writeAPIError(w, http.StatusTooManyRequests, ErrTypeBusy, fmt.Sprintf(
			"busy: the node holds %d MiB of other requests' bodies, its bound, and none of it was freed for this one's %d bytes within %v: retry",
			b.most>>20, n, b.wait))
		return false
	}
	s.n = n
	// The request's context ends when its handler returns (or its
	// client leaves), if bodyDecoded did not come first.
	context.AfterFunc(r.Context(), s.release)
	return true
}
