package hot

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func entry(seq int64, kind, agent string) Entry {
	return Entry{Seq: seq, Time: time.Unix(seq, 0), Kind: kind, AgentID: agent, Name: "x"}
}

func seqs(es []Entry) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

func TestRingBoundedAndFiltered(t *testing.T) {
	r := NewRing(4)
	for i := int64(1); i <= 6; i++ {
		kind := KindTool
		if i%2 == 0 {
			kind = KindLLM
		}
		r.Add(entry(i, kind, "a"+string(rune('0'+i%3))))
	}
	tests := []struct {
		name  string
		after int64
		f     Filter
		limit int
		want  []int64
	}{
		{"all kept (oldest overwritten)", 0, Filter{}, 0, []int64{3, 4, 5, 6}},
		{"after", 4, Filter{}, 0, []int64{5, 6}},
		{"tools", 0, Filter{Kind: KindTool}, 0, []int64{3, 5}},
		{"agent", 0, Filter{AgentID: "a0"}, 0, []int64{3, 6}},
		{"limit keeps the newest", 0, Filter{}, 2, []int64{5, 6}},
	}
	for _, tt := range tests {
		got := seqs(r.After(tt.after, tt.f, tt.limit))
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			}
		}
	}
	if NewRing(0).capacity != DefaultCapacity {
		t.Fatal("zero capacity is not the default")
	}
}

func TestRingWait(t *testing.T) {
	r := NewRing(8)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { err = r.Wait(ctx, 0) })
	r.Add(entry(1, KindEvent, ""))
	wg.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	short, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := r.Wait(short, 1); err == nil {
		t.Fatal("Wait for a newer entry on a done context returned nil")
	}
	if err := r.Wait(short, 0); err != nil {
		t.Fatalf("Wait for an entry already there: %v", err)
	}
}

func TestEntryString(t *testing.T) {
	e := Entry{Time: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC), Kind: KindTool, Node: "n1", AgentID: "edge-1",
		Name: "shell", Status: "error", Detail: "timeout 30000ms"}
	want := "2026-01-02T03:04:05.006Z tool    node=n1 agent=edge-1 shell error timeout 30000ms"
	if got := e.String(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if s := (Entry{Kind: KindEvent, Name: "node_start"}).String(); !strings.Contains(s, "event   node_start") {
		t.Fatalf("%q", s)
	}
}

// TestRingPage: the head moves past entries the filter skipped, so a
// filtered long poll is not woken by them again.
func TestRingPage(t *testing.T) {
	r := NewRing(4)
	r.Add(entry(1, KindTool, "a"), entry(2, KindLLM, ""), entry(3, KindTool, "b"), entry(4, KindEvent, ""), entry(5, KindLLM, ""))
	for _, tc := range []struct {
		name  string
		after int64
		f     Filter
		limit int
		want  string
		head  int64
	}{
		{"all", 0, Filter{}, 0, "[2 3 4 5]", 5},
		{"tools", 0, Filter{Kind: KindTool}, 0, "[3]", 5},
		{"nothing new", 5, Filter{Kind: KindTool}, 0, "[]", 5},
		{"after the head", 9, Filter{}, 0, "[]", 9},
		{"limit keeps the newest", 0, Filter{}, 2, "[4 5]", 5},
		{"agent", 0, Filter{AgentID: "b"}, 0, "[3]", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, head := r.Page(tc.after, tc.f, tc.limit)
			if s := fmt.Sprint(seqs(got)); s != tc.want || head != tc.head {
				t.Fatalf("entries %s, head %d; want %s, %d", s, head, tc.want, tc.head)
			}
		})
	}
	if _, head := NewRing(2).Page(-7, Filter{}, 0); head != -7 {
		t.Fatalf("empty ring: head %d, want the after given", head)
	}
}

// TestRingGrows: a ring allocates as it fills, never past its capacity,
// and keeps the newest entries in order across the growth and the wrap.
func TestRingGrows(t *testing.T) {
	const capacity = 200
	for _, n := range []int{0, 1, 63, 64, 65, 129, 199, 200, 201, 450} {
		for _, batch := range []int{1, 7, 300} {
			r := NewRing(capacity)
			var es []Entry
			for i := 1; i <= n; i++ {
				es = append(es, entry(int64(i), KindTool, "a"))
				if len(es) == batch || i == n {
					r.Add(es...)
					es = es[:0]
				}
			}
			if cap(r.buf) > capacity {
				t.Errorf("n=%d batch=%d: %d slots allocated, capacity %d", n, batch, cap(r.buf), capacity)
			}
			got := seqs(r.After(0, Filter{}, 0))
			first := max(1, n-capacity+1)
			if len(got) != n-first+1 {
				t.Fatalf("n=%d batch=%d: %d entries kept, want %d", n, batch, len(got), n-first+1)
			}
			for i, s := range got {
				if s != int64(first+i) {
					t.Fatalf("n=%d batch=%d: kept %v..., want %d first", n, batch, got[:min(5, len(got))], first)
				}
			}
			if n > 0 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if err := r.Wait(ctx, int64(n-1)); err != nil {
					t.Errorf("n=%d: Wait after the second newest: %v", n, err)
				}
				cancel()
			}
		}
	}
}
