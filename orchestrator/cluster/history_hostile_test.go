package cluster

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// TestSharedHistoryHostileServer: a broken or hostile sqld neither crashes
// the node nor takes the cluster's token elsewhere.
func TestSharedHistoryHostileServer(t *testing.T) {
	var stolen atomic.Int64
	thief := listen(t, func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		io.WriteString(w, `{"baton":null,"results":[]}`)
	})
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc
	}{
		{"no results", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"baton":null,"results":[]}`)
		}},
		{"row shorter than its columns", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"baton":null,"results":[{"type":"ok","response":{"type":"execute","result":{"cols":[{"name":"a"},{"name":"b"}],"rows":[[]]}}}]}`)
		}},
		{"redirect to another port", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, thief+r.URL.Path, http.StatusTemporaryRedirect)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := OpenSharedHistory(listen(t, tc.answer), "cluster-token", "n1")
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if _, err := h.LoadMessages(context.Background(), "c1"); err == nil {
				t.Fatal("LoadMessages: no error")
			}
		})
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("another server got %d requests", n)
	}
}

// listen serves h on a random loopback port until the test ends.
func listen(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}
