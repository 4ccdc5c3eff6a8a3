package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/internal/proctest"
)

// TestCallResultBound: an answer to a call past MaxResultBytes fails the
// call with its size, on both transports, whichever end of the answer its
// id is at; a stdio answer that never ends is answered as too large and
// its server stopped. Before, a 15 MB answer was decoded whole (the agent
// went from 35 MB to 145 MB) and handed on, and past the SDK's 16 MiB line
// limit the session ended with a parse error.
func TestCallResultBound(t *testing.T) {
	const big = 15_000_000
	for _, tc := range []struct {
		name    string
		server  ServerConfig
		httpSrv http.Handler
		want    string // in the error; empty: the call succeeds; "-": it fails
	}{
		{"stdio within the bound", ServerConfig{Command: hostileBin, Args: []string{"big", fmt.Sprint(MaxResultBytes - 1024)}}, nil, ""},
		{"stdio past the bound", ServerConfig{Command: hostileBin, Args: []string{"big", fmt.Sprint(big)}}, nil,
			fmt.Sprintf("an answer of %d bytes, more than %d", big+len(`{"result":{"content":[{"type":"text","text":""}]},"jsonrpc":"2.0","id":2}`), MaxResultBytes)},
		{"stdio without end", ServerConfig{Command: hostileBin, Args: []string{"endless"}}, nil,
			fmt.Sprintf("more than %d bytes without an end", MaxMessageBytes)},
		{"http within the bound", ServerConfig{}, hugeAnswers(MaxResultBytes-1024, false, 0), ""},
		{"http past the bound", ServerConfig{}, hugeAnswers(big, false, 0), fmt.Sprintf("more than %d", MaxResultBytes)},
		{"http stream past the bound", ServerConfig{}, hugeAnswers(big, true, 0), fmt.Sprintf("more than %d", MaxResultBytes)},
		// The stream fails past twice the bound, and the SDK says only
		// that the request ended without an answer.
		{"http stream split across data lines", ServerConfig{}, hugeAnswers(big, true, 64<<10), "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.httpSrv != nil {
				srv := httptest.NewServer(tc.httpSrv)
				t.Cleanup(srv.Close)
				tc.server.URL = srv.URL
			}
			set, errs := Connect(context.Background(), map[string]ServerConfig{"h": tc.server}, nil)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			t.Cleanup(func() { set.Close() })
			tools, _ := set.Tools()
			// The server's session ends with the call; the server is then
			// started again in the background, with the same command line:
			// the process to see gone is this start's.
			started := proctest.PIDs(append([]string{tc.server.Command}, tc.server.Args...)...)
			out := tools[0].Run(context.Background(), nil)
			if tc.want == "" {
				if out.ErrorType() != "" || len(out.Text()) < MaxResultBytes-2048 {
					t.Fatalf("error %q, %d bytes of text, want the whole text", out.ErrorText(), len(out.Text()))
				}
				return
			}
			if tc.want == "-" {
				if out.ErrorType() != wire.ErrExecutionFailed {
					t.Fatalf("error %q (%s), want execution_failed", out.ErrorText(), out.ErrorType())
				}
				return
			}
			if out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), tc.want) ||
				!strings.Contains(out.ErrorText(), ErrResultTooLarge.Error()) {
				t.Fatalf("error %q (%s), want execution_failed naming %q", out.ErrorText(), out.ErrorType(), tc.want)
			}
			if tc.server.Command != "" && strings.Contains(tc.want, "without an end") {
				if len(started) != 1 {
					t.Fatalf("%d processes %v of the server before the call, want 1", len(started), started)
				}
				proctest.WaitPIDsGone(t, started...)
			}
		})
	}
}

// TestLinesThatAreNoMessages: a stdio server's line that is not a
// JSON-RPC message (a log line printed to its standard output, a JSON
// object of its own, spaces after an answer) is left out, logged at the
// 1st, 2nd, 4th, 8th... such line, and the session goes on; a broken
// answer fails its call at once, naming why. Before, the SDK ended the
// session at the first such line: the call in flight failed with
// "invalid character 'D' looking for beginning of value" and the server
// was restarted, at every call.
func TestLinesThatAreNoMessages(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		calls    int
		want     string // the text of every answer; empty: an error
		wantErr  string // in the error
		wantLogs int    // lines logged about lines left out
	}{
		// Each call brings two lines that are no message (the blank
		// line is no message either, but nothing to tell).
		{"noise", 5, "ok", "", 4}, // lines 1, 2, 4 and 8 of 10
		{"broken", 2, "", "the server's answer is not a JSON-RPC message (a line of 45 bytes): unexpected end of JSON input", 2},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var logs bytes.Buffer
			var logMu sync.Mutex // guards logs
			log := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))
			set, errs := ConnectWith(context.Background(), map[string]ServerConfig{"h": {Command: hostileBin, Args: []string{tc.mode}}},
				Options{Log: log})
			t.Cleanup(func() { set.Close() })
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			tools, _ := set.Tools()
			started := proctest.PIDs(hostileBin, tc.mode)
			for i := range tc.calls {
				begin := time.Now()
				out := tools[0].Run(context.Background(), nil)
				if tc.want != "" && (out.ErrorType() != "" || out.Text() != tc.want) {
					t.Fatalf("call %d: %q, error %q (%s); want %q", i, out.Text(), out.ErrorText(), out.ErrorType(), tc.want)
				}
				if tc.wantErr != "" && (out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), tc.wantErr)) {
					t.Fatalf("call %d: error %q (%s), want execution_failed with %q", i, out.ErrorText(), out.ErrorType(), tc.wantErr)
				}
				if d := time.Since(begin); d > DefaultTimeout/2 {
					t.Fatalf("call %d took %v: it waited for its timeout", i, d)
				}
			}
			if now := proctest.PIDs(hostileBin, tc.mode); len(started) != 1 || !slices.Equal(now, started) {
				t.Errorf("server processes %v before the calls, %v after; want the same one: the session went on", started, now)
			}
			logMu.Lock()
			defer logMu.Unlock()
			if n := strings.Count(logs.String(), "not a JSON-RPC message"); n != tc.wantLogs {
				t.Errorf("%d lines logged about lines left out, want %d:\n%s", n, tc.wantLogs, logs.String())
			}
		})
	}
}

// lockedWriter is a writer that takes mu while it writes.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestFrameReaderKeepsNoLongLine: what frameReader allocates while it
// reads a line of 64 MiB is bounded by its line bound, not by the line.
func TestFrameReaderKeepsNoLongLine(t *testing.T) {
	const line = 64 << 20
	src := io.MultiReader(strings.NewReader(`{"result":"`), io.LimitReader(repeatReader('z'), line), strings.NewReader(`","id":7}`+"\n"))
	f := newFrameReader(src, func() int { return MaxResultBytes }, "")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := io.ReadAll(f)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*MaxResultBytes {
		t.Errorf("allocated %d bytes reading a line of %d, want at most %d", alloc, line, 8*MaxResultBytes)
	}
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(got))
	if err != nil {
		t.Fatalf("decode %q: %v", got, err)
	}
	seven, _ := jsonrpc.MakeID(float64(7))
	if r, ok := msg.(*jsonrpc.Response); !ok || r.ID != seven || r.Error == nil {
		t.Fatalf("got %q, want an error answer to id 7", got)
	}
}

// TestFrameReaderBoundsAnEvent: an event stream's message split across
// data lines, each within the bound, fails the stream once its event
// passes twice the bound, having handed on no more than that. Before
// (commit 6b89732), the reader of the stream got all 64 MiB.
func TestFrameReaderBoundsAnEvent(t *testing.T) {
	line := "data: " + strings.Repeat("s", 64<<10) + "\n"
	src := io.MultiReader(strings.NewReader("event: message\n"), io.LimitReader(&lineRepeater{line: line}, 64<<20))
	got, err := io.ReadAll(newFrameReader(src, func() int { return MaxResultBytes }, "data:"))
	if !errors.Is(err, ErrMessageTooLarge) || len(got) > 2*MaxResultBytes+len(line) {
		t.Fatalf("read %d bytes, err %v; want at most %d and %v", len(got), err, 2*MaxResultBytes+len(line), ErrMessageTooLarge)
	}
}

// lineRepeater reads as its line again and again.
type lineRepeater struct {
	line string
	off  int
}

func (r *lineRepeater) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.line[r.off:])
		n += c
		r.off = (r.off + c) % len(r.line)
	}
	return n, nil
}

// repeatReader reads as an endless run of its byte.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// FuzzFrameReader: with a bound of 64 bytes, every line within it comes out
// as it went in, and every line past it comes out as an error answer to
// its id when encoding/json reads it as an answer (a top-level id, a
// number or a string, and no method), and not at all when it reads it as
// something else. A line that is not JSON comes out as an error answer or
// not at all. The same holds for the lines as data lines of an event
// stream, an event each.
func FuzzFrameReader(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("a", 100) + `"}]}}`,
		`{"result":{"x":"` + strings.Repeat("b", 80) + `","id":9},"jsonrpc":"2.0","id":"s\"1"}`,
		`{"jsonrpc":"2.0","id":3,"method":"roots/list","params":{"pad":"` + strings.Repeat("c", 80) + `"}}`,
		`{"id":{"x":1},"result":"` + strings.Repeat("d", 80) + `"}`,
		"short\n" + strings.Repeat("e", 200) + "\n{}",
		`[{"id":1,"result":"` + strings.Repeat("f", 80) + `"}]`,
		"Debug: a log line\n{\"id\":5,\"result\":{}}\n {\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}} \n{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":[",
	} {
		f.Add(s)
	}
	const bound = 64
	f.Fuzz(func(t *testing.T, in string) {
		lines := strings.Split(in, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		checkFrames(t, in, lines, "", bound)
		checkMessages(t, in, lines, bound)
		// The same lines as the data of an event stream, an event each.
		var events strings.Builder
		for _, l := range lines {
			events.WriteString("data:" + l + "\n\n")
		}
		checkFrames(t, events.String(), lines, "data:", bound)
	})
}

// checkFrames checks what a frameReader with prefix and bound makes of
// in, the lines, each followed by a blank line when prefix is set.
func checkFrames(t *testing.T, in string, lines []string, prefix string, bound int) {
	got, err := io.ReadAll(newFrameReader(strings.NewReader(in), func() int { return bound }, prefix))
	if err != nil {
		t.Fatal(err)
	}
	out := string(got)
	for _, l := range lines {
		rest, ok := lineOut(t, out, l, prefix, bound)
		if !ok {
			t.Fatalf("line %q (prefix %q): output %q", l, prefix, out)
		}
		out = rest
		if prefix != "" {
			if !strings.HasPrefix(out, "\n") {
				t.Fatalf("line %q: no blank line after it in %q", l, out)
			}
			out = out[1:]
		}
	}
	if out != "" {
		t.Fatalf("output %q left over (prefix %q)", out, prefix)
	}
}

// checkMessages checks what a stdio server's frameReader (messages set)
// with bound makes of in, the lines: a line past the bound comes out as
// checkFrames says; one within it comes out trimmed when it is a JSON-RPC
// message or a JSON array (or not at all when blank), else as an error
// answer (codeNotMessage) to its id when it is an answer, else not at all.
func checkMessages(t *testing.T, in string, lines []string, bound int) {
	f := newFrameReader(strings.NewReader(in), func() int { return bound }, "")
	f.messages = true
	var told int
	f.dropped = func([]byte, error) { told++ }
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	out := string(got)
	var notMessages int
	for _, l := range lines {
		tl := strings.TrimSpace(l)
		// What replaces l when it is refused, and the line to read it as.
		code, msg, read := int64(codeResultTooLarge), fmt.Sprintf("an answer of %d bytes, more than %d", len(l), bound), l
		if len(l) <= bound {
			if tl == "" {
				continue
			}
			_, decErr := jsonrpc.DecodeMessage([]byte(tl))
			if json.Valid([]byte(tl)) && (tl[0] == '[' || decErr == nil) {
				rest, ok := strings.CutPrefix(out, tl+"\n")
				if !ok {
					t.Fatalf("message %q: output %q", l, out)
				}
				out = rest
				continue
			}
			notMessages++
			code, read = codeNotMessage, tl
			msg = notMessage([]byte(tl), lineMessage([]byte(tl)))
		}
		id, known := answerOf(read)
		answer, rest, _ := strings.Cut(out, "\n")
		m, err := jsonrpc.DecodeMessage([]byte(answer))
		r, isResp := m.(*jsonrpc.Response)
		var we *jsonrpc.Error
		replaced := err == nil && isResp && errors.As(r.Error, &we) && we.Code == code && we.Message == msg
		switch {
		case known && id == nil:
			// nothing came out for l; a replacement next is a later line's
		case known && (!replaced || r.ID != *id):
			t.Fatalf("line %q, an answer to %v: output %q, want an error answer to it", l, *id, out)
		case replaced:
			out = rest
		}
	}
	if out != "" {
		t.Fatalf("output %q left over", out)
	}
	if told != notMessages {
		t.Fatalf("told of %d lines left out, want %d", told, notMessages)
	}
}

// lineOut checks what out holds for line l and returns what follows.
func lineOut(t *testing.T, out, l, prefix string, bound int) (string, bool) {
	if len(prefix)+len(l) <= bound {
		rest, ok := strings.CutPrefix(out, prefix+l+"\n")
		return rest, ok
	}
	// An error answer is longer than the bound, a line handed on is not.
	answer, rest, _ := strings.Cut(out, "\n")
	id, known := answerOf(l)
	if known && id == nil || !known && len(answer) <= bound {
		return out, len(answer) <= bound // nothing came out for l, rightly
	}
	msg, err := jsonrpc.DecodeMessage([]byte(strings.TrimPrefix(answer, prefix)))
	r, ok := msg.(*jsonrpc.Response)
	var we *jsonrpc.Error
	if err != nil || !ok || !strings.HasPrefix(answer, prefix) || !errors.As(r.Error, &we) || we.Code != codeResultTooLarge ||
		we.Message != fmt.Sprintf("an answer of %d bytes, more than %d", len(prefix)+len(l), bound) {
		return out, false
	}
	if known && r.ID != *id {
		t.Fatalf("line %q: answer to %v, want %v", l, r.ID, *id)
	}
	return rest, true
}

// answerOf reads l as encoding/json does: known is false when l is not a
// JSON object, or when it has a key written with escapes (topScanner does
// not unescape keys); id is nil when l is no answer.
func answerOf(l string) (id *jsonrpc.ID, known bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(l), &m) != nil || strings.Contains(l, `\`) {
		return nil, false
	}
	raw, has := m["id"]
	if _, method := m["method"]; method || !has {
		return nil, true
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, true
	}
	switch v.(type) {
	case float64, string:
		i, err := jsonrpc.MakeID(v)
		if err != nil {
			return nil, true
		}
		return &i, true
	}
	return nil, true
}
