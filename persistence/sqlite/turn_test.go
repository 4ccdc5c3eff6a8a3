package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

func sampleLLMCall(i int) persistence.LLMCall {
	return persistence.LLMCall{
		RecordID: persistence.NewRecordID(), Time: time.Now(), Node: "orch-1", ConversationID: "conv-1",
		Provider: "scripted", Model: "m1", InputTokens: int64(100 + i), OutputTokens: int64(10 + i),
		LatencyMs: int64(i), Status: persistence.StatusSuccess, Iteration: i,
	}
}

func msg(role, content string) persistence.Message {
	body, _ := json.Marshal(map[string]string{"role": role, "content": content})
	return persistence.Message{Role: role, Body: body}
}

func TestRecordLLMCallRoundTrip(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	c := sampleLLMCall(3)
	c.Status, c.ErrorType, c.Error = persistence.StatusError, "timeout", "deadline exceeded"
	c.Time = time.Date(2026, 3, 1, 12, 0, 0, 5, time.FixedZone("x", 3600))
	if err := s.RecordLLMCall(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	res, err := QueryReadOnly(context.Background(), path, `SELECT record_id, ts, node, conversation_id, provider, model,
		input_tokens, output_tokens, latency_ms, status, error_type, error, iteration FROM llm_calls`)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{c.RecordID, "2026-03-01T11:00:00.000000005Z", "orch-1", "conv-1", "scripted", "m1",
		c.InputTokens, c.OutputTokens, c.LatencyMs, "error", "timeout", "deadline exceeded", int64(3)}
	if len(res.Rows) != 1 || !slices.Equal(res.Rows[0], want) {
		t.Fatalf("row:\n got %v\nwant %v", res.Rows, want)
	}

	// Generated defaults; optional columns become NULL.
	bare := persistence.LLMCall{Node: "n", Provider: "p", Status: persistence.StatusSuccess}
	if err := s.RecordLLMCall(context.Background(), bare); err != nil {
		t.Fatal(err)
	}
	if n := queryOne(t, path, `SELECT count(*) FROM llm_calls WHERE model IS NULL AND conversation_id IS NULL
		AND length(record_id) = 32 AND ts_ms > 0`); n != int64(1) {
		t.Fatalf("bare record not stored with defaults and NULLs (%v)", n)
	}
}

func TestRecordLLMCallRejectsInvalid(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	tests := []struct {
		name string
		edit func(c *persistence.LLMCall)
		want string
	}{
		{"no node", func(c *persistence.LLMCall) { c.Node = "" }, "node is empty"},
		{"no provider", func(c *persistence.LLMCall) { c.Provider = "" }, "provider is empty"},
		{"bad status", func(c *persistence.LLMCall) { c.Status = "ok" }, `status "ok"`},
		{"negative tokens", func(c *persistence.LLMCall) { c.OutputTokens = -1 }, "token counts"},
		{"negative latency", func(c *persistence.LLMCall) { c.LatencyMs = -5 }, "latency_ms -5"},
		{"negative iteration", func(c *persistence.LLMCall) { c.Iteration = -1 }, "iteration -1"},
	}
	for _, tt := range tests {
		c := sampleLLMCall(1)
		tt.edit(&c)
		err := s.RecordLLMCall(context.Background(), c)
		if !errors.Is(err, persistence.ErrInvalidLLMCall) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want ErrInvalidLLMCall mentioning %q", tt.name, err, tt.want)
		}
	}
	if n := queryOne(t, path, "SELECT count(*) FROM llm_calls"); n != int64(0) {
		t.Fatalf("%v invalid rows stored", n)
	}
}

func TestAppendAndLoadMessages(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	first := []persistence.Message{msg("system", "be brief"), msg("user", "hi")}
	first[0].Time = t0
	first[1].Time = t0.Add(time.Second)
	if err := s.AppendMessages(ctx, "c1", first); err != nil {
		t.Fatal(err)
	}
	if first[0].Seq != 1 || first[1].Seq != 2 || first[1].ConversationID != "c1" {
		t.Fatalf("assigned %+v", first)
	}
	second := []persistence.Message{msg("assistant", "hello"), {ConversationID: "c1", Role: "tool", Body: []byte(`{"role":"tool","content":"42"}`)}}
	if err := s.AppendMessages(ctx, "c1", second); err != nil {
		t.Fatal(err)
	}
	if second[0].Seq != 3 || second[1].Seq != 4 || second[0].Time.IsZero() {
		t.Fatalf("assigned %+v", second)
	}
	if err := s.AppendMessages(ctx, "c2", []persistence.Message{msg("user", "other")}); err != nil {
		t.Fatal(err)
	}

	got, err := s.LoadMessages(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]persistence.Message(nil), first...), second...)
	if len(got) != len(want) {
		t.Fatalf("loaded %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Seq != w.Seq || g.Role != w.Role || string(g.Body) != string(w.Body) || !g.Time.Equal(w.Time) || g.ConversationID != "c1" {
			t.Errorf("message %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if none, err := s.LoadMessages(ctx, "nope"); err != nil || len(none) != 0 {
		t.Fatalf("unknown conversation: %v %v", none, err)
	}
	// The body is queryable with SQLite's JSON functions.
	if v := queryOne(t, path, `SELECT json_extract(body, '$.content') FROM messages WHERE conversation_id = 'c1' AND seq = 4`); v != "42" {
		t.Fatalf("json_extract: %v", v)
	}
	if err := s.AppendMessages(ctx, "c1", nil); err != nil {
		t.Fatalf("empty append: %v", err)
	}
}

func TestAppendMessagesInvalidStoresNothing(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	tests := []struct {
		name string
		conv string
		m    persistence.Message
		want string
	}{
		{"no conversation", "", msg("user", "x"), "conversation id is empty"},
		{"other conversation", "c1", persistence.Message{ConversationID: "c9", Role: "user", Body: []byte(`{}`)}, `conversation "c9"`},
		{"no role", "c1", persistence.Message{Body: []byte(`{}`)}, "role is empty"},
		{"no body", "c1", persistence.Message{Role: "user"}, "body is empty"},
		{"bad body", "c1", persistence.Message{Role: "user", Body: []byte(`{"a":`)}, "not valid JSON"},
	}
	for _, tt := range tests {
		err := s.AppendMessages(context.Background(), tt.conv, []persistence.Message{msg("user", "ok"), tt.m})
		index := "message 1"
		if tt.conv == "" {
			index = "message 0" // every message lacks the conversation
		}
		if !errors.Is(err, persistence.ErrInvalidMessage) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), index) {
			t.Errorf("%s: got %v, want ErrInvalidMessage naming %s and %q", tt.name, err, index, tt.want)
		}
	}
	if n := queryOne(t, path, "SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM conversations)"); n != int64(0) {
		t.Fatalf("%v rows stored by rejected appends", n)
	}
}

// A failed commit stores no message and uses up no Seq.
func TestAppendMessagesCommitFailure(t *testing.T) {
	s, path, full := openFullDiskStore(t)
	ctx := context.Background()
	err := s.AppendMessages(ctx, "c1", []persistence.Message{msg("user", "lost")})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), `append messages to "c1"`) {
		t.Fatalf("append on a full disk: %v", err)
	}
	full.Store(false)
	kept := []persistence.Message{msg("user", "kept")}
	if err := s.AppendMessages(ctx, "c1", kept); err != nil {
		t.Fatal(err)
	}
	if kept[0].Seq != 1 {
		t.Fatalf("seq after a failed append = %d, want 1", kept[0].Seq)
	}
	if n := queryOne(t, path, "SELECT count(*) FROM messages"); n != int64(1) {
		t.Fatalf("%v messages stored, want 1", n)
	}
}

// Concurrent appenders to one conversation get disjoint, contiguous Seqs,
// and each append's messages stay together.
func TestAppendMessagesConcurrent(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	const writers, appends, per = 8, 20, 3
	var wg sync.WaitGroup
	errs := make(chan error, writers*appends)
	for w := range writers {
		wg.Go(func() {
			for a := range appends {
				batch := make([]persistence.Message, per)
				for i := range batch {
					batch[i] = msg("user", fmt.Sprintf("%d/%d/%d", w, a, i))
				}
				if err := s.AppendMessages(context.Background(), "shared", batch); err != nil {
					errs <- err
					return
				}
				for i := range batch {
					if batch[i].Seq != batch[0].Seq+int64(i) {
						errs <- fmt.Errorf("append %d/%d not contiguous: %d then %d", w, a, batch[0].Seq, batch[i].Seq)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.LoadMessages(context.Background(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != writers*appends*per {
		t.Fatalf("loaded %d, want %d", len(got), writers*appends*per)
	}
	for i, m := range got {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
		var body struct{ Content string }
		if err := json.Unmarshal(m.Body, &body); err != nil {
			t.Fatal(err)
		}
		// Messages of one append are adjacent, in order.
		if i%per != 0 {
			var prev struct{ Content string }
			json.Unmarshal(got[i-1].Body, &prev)
			if prev.Content[:strings.LastIndexByte(prev.Content, '/')] != body.Content[:strings.LastIndexByte(body.Content, '/')] {
				t.Fatalf("seq %d (%s) interleaves with seq %d (%s)", m.Seq, body.Content, got[i-1].Seq, prev.Content)
			}
		}
	}
}

func TestConversations(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	add := func(conv string, offsets ...time.Duration) {
		t.Helper()
		var ms []persistence.Message
		for _, o := range offsets {
			m := msg("user", conv)
			m.Time = base.Add(o)
			ms = append(ms, m)
		}
		if err := s.AppendMessages(ctx, conv, ms); err != nil {
			t.Fatal(err)
		}
	}
	add("old", 0, time.Minute)
	add("new", 10*time.Minute)
	add("mid", 5*time.Minute)
	add("old", 20*time.Minute, 30*time.Second) // becomes the latest; an earlier time does not move first
	all, err := s.Conversations(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []persistence.ConversationInfo{
		{ID: "old", FirstTime: base, LastTime: base.Add(20 * time.Minute), MessageCount: 4},
		{ID: "new", FirstTime: base.Add(10 * time.Minute), LastTime: base.Add(10 * time.Minute), MessageCount: 1},
		{ID: "mid", FirstTime: base.Add(5 * time.Minute), LastTime: base.Add(5 * time.Minute), MessageCount: 1},
	}
	if len(all) != len(want) {
		t.Fatalf("got %+v", all)
	}
	for i := range want {
		g, w := all[i], want[i]
		if g.ID != w.ID || !g.FirstTime.Equal(w.FirstTime) || !g.LastTime.Equal(w.LastTime) || g.MessageCount != w.MessageCount {
			t.Errorf("conversation %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	two, err := s.Conversations(ctx, 2)
	if err != nil || len(two) != 2 || two[1].ID != "new" {
		t.Fatalf("limit 2: %+v %v", two, err)
	}
}

func TestRecordEvent(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	ctx := context.Background()
	e := persistence.Event{Node: "orch-1", AgentID: "edge-1", Kind: persistence.EventAgentOffline, Detail: []byte(`{"reason":"last will"}`)}
	if err := s.RecordEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if v := queryOne(t, path, `SELECT json_extract(detail, '$.reason') FROM events WHERE agent_id = 'edge-1' AND kind = 'agent_offline'`); v != "last will" {
		t.Fatalf("detail: %v", v)
	}
	for _, bad := range []persistence.Event{{Kind: "k"}, {Node: "n"}, {Node: "n", Kind: "k", Detail: []byte("{")}} {
		if err := s.RecordEvent(ctx, bad); !errors.Is(err, persistence.ErrInvalidEvent) {
			t.Errorf("RecordEvent(%+v): got %v, want ErrInvalidEvent", bad, err)
		}
	}
}

// A database written by schema v1 opens, migrates, and keeps its rows.
func TestMigrateFromV1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(migrations[0] + "; PRAGMA user_version = 1;"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO tool_calls (record_id, ts, ts_ms, node, side, tool, status, elapsed_ms, result_bytes)
		VALUES ('old', '2025-01-01T00:00:00.000000000Z', 1735689600000, 'n', 'edge', 'shell', 'success', 1, 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("open v1 database: %v", err)
	}
	if err := s.RecordLLMCall(context.Background(), sampleLLMCall(0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := queryOne(t, path, "PRAGMA user_version"); v != int64(len(migrations)) {
		t.Fatalf("user_version %v", v)
	}
	if n := queryOne(t, path, "SELECT count(*) FROM tool_calls WHERE record_id = 'old'"); n != int64(1) {
		t.Fatal("v1 row lost in migration")
	}
}
