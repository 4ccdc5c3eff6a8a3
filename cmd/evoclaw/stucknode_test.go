package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestClientsEndWithAStuckNode: a node that took the connection and
// answers nothing, or that starts a chat's stream and then goes silent,
// fails the command with a message that says so, within the client's
// bounds. `chat` waited for ever on either before (`status` and `jobs`
// ended at their own timeouts with "context deadline exceeded").
func TestClientsEndWithAStuckNode(t *testing.T) {
	oldHeader, oldSilence := nodeHeaderTimeout, nodeStreamSilence
	nodeHeaderTimeout, nodeStreamSilence = 500*time.Millisecond, 500*time.Millisecond
	t.Cleanup(func() { nodeHeaderTimeout, nodeStreamSilence = oldHeader, oldSilence })

	// mute accepts connections and never answers.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	// silent starts a chat's stream, sends one event and then nothing.
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: conversation\ndata: {\"conversation_id\":\"c1\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer silent.Close()

	for _, tc := range []struct {
		name, node string
		args       []string
		want       string
	}{
		{"chat, no answer", "http://" + mute.Addr().String(), []string{"chat", "hi"}, "sent no answer"},
		{"chat, silent stream", silent.URL, []string{"chat", "hi"}, "sent nothing for"},
		{"jobs, no answer", "http://" + mute.Addr().String(), []string{"jobs", "list"}, "sent no answer"},
		{"logs, no answer", "http://" + mute.Addr().String(), []string{"logs", "--data-dir", t.TempDir()}, "sent no answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envToken, fakeToken)
			args := append(append([]string{}, tc.args...), "--node", tc.node)
			if tc.args[0] == "chat" || tc.args[0] == "jobs" {
				// flags before the question or the subcommand's arguments
				args = append([]string{tc.args[0], "--node", tc.node}, tc.args[1:]...)
			}
			start := time.Now()
			done := make(chan struct{})
			var code int
			var errOut string
			go func() {
				defer close(done)
				code, _, errOut = runArgs(args...)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%v still waiting after 30 s", args)
			}
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("%v: exit %d after %v, stderr %q: want %q", args, code, time.Since(start), errOut, tc.want)
			}
		})
	}
}

// TestSilenceBound: reads through a silenceBound fail with
// errNoAnswerInTime once nothing arrives for its bound, and not while
// bytes keep coming.
func TestSilenceBound(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	s := newSilenceBound(a, 200*time.Millisecond)
	defer s.Stop()
	go func() {
		for range 5 {
			time.Sleep(50 * time.Millisecond)
			if _, err := b.Write([]byte("x")); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 8)
	for i := range 5 {
		if _, err := s.Read(buf); err != nil {
			t.Fatalf("read %d while bytes keep coming: %v", i, err)
		}
	}
	if _, err := s.Read(buf); !errors.Is(err, errNoAnswerInTime) {
		t.Fatalf("read after silence: %v, want errNoAnswerInTime", err)
	}
}
