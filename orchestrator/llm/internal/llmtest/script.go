package llmtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Step is one write of a scripted stream: Text, after Wait. With Cut,
// the server then drops the connection without ending the body.
type Step struct {
	Wait time.Duration
	Text string
	Cut  bool
}

// Script serves an event stream written step by step, each step flushed,
// and then holds the connection open without a word until the client
// leaves: a server that never ends its stream. It is closed at the end
// of the test.
func Script(t testing.TB, steps ...Step) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for _, st := range steps {
			select {
			case <-time.After(st.Wait):
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, st.Text)
			w.(http.Flusher).Flush()
			if st.Cut {
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					conn.Close()
				}
				return
			}
		}
		<-r.Context().Done()
	}))
	t.Cleanup(s.Close)
	return s
}

// Heartbeats are n comment lines, one every d: a server that keeps the
// connection alive without saying anything.
func Heartbeats(n int, d time.Duration) []Step {
	steps := make([]Step, n)
	for i := range steps {
		steps[i] = Step{Wait: d, Text: ": ping\n\n"}
	}
	return steps
}
