package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pollHealthz waits through refusals and non-200 answers for the first
// 200, and gives up when its context ends.
func TestPollHealthz(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	began := time.Now()
	d, err := pollHealthz(context.Background(), srv.URL+"/healthz", began)
	if err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("asked %d times, want 3 (two 503s, then 200)", n)
	}
	if d <= 0 || d > time.Since(began) {
		t.Errorf("took %s, outside (0, %s]", d, time.Since(began))
	}

	// Nothing listens: refused until the context ends.
	addr := srv.Listener.Addr().String()
	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := pollHealthz(ctx, "http://"+addr+"/healthz", time.Now()); err == nil || !strings.Contains(err.Error(), "no 200") {
		t.Fatalf("pollHealthz with nothing listening = %v, want an error saying no 200", err)
	}
}

// --tools names the round trips to measure; an unknown or empty list is a
// usage error.
func TestParseBenchTools(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    benchKinds
		wantErr bool
	}{
		{in: "process,builtin", want: benchKinds{process: true, builtin: true}},
		{in: "builtin", want: benchKinds{builtin: true}},
		{in: " process ", want: benchKinds{process: true}},
		{in: "builtin,builtin", want: benchKinds{builtin: true}},
		{in: "", wantErr: true},
		{in: ",", wantErr: true},
		{in: "shell", wantErr: true},
		{in: "process,mcp", wantErr: true},
	} {
		got, err := parseBenchTools(tc.in)
		if tc.wantErr {
			if !errors.Is(err, errUsage) {
				t.Errorf("parseBenchTools(%q) = %+v, %v; want a usage error", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseBenchTools(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}
