package libsqlhttp

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileShape is an answer made of many copies of one tiny JSON value,
// each of which the client library would decode into a struct, a slice,
// a map entry or an interface of its own.
type hostileShape struct {
	name      string
	head, sep string // the answer is head + elem(0) + sep + elem(1) ... + tail
	elem      func(i int) string
	tail      string
	counted   int64 // values the guard counts per element and sep
}

func same(s string) func(int) string { return func(int) string { return s } }

var hostileShapes = []hostileShape{
	// One column, rows of a null each.
	{"rows", execHead(`[{"name":"v"}]`), ",", same(`[{"type":"null"}]`), execTail, 3},
	// Rows of 1000 null columns.
	{"wide", execHead(`[` + strings.TrimSuffix(strings.Repeat(`{"name":"c"},`, 1000), ",") + `]`), ",",
		same(`[` + strings.TrimSuffix(strings.Repeat(`{"type":"null"},`, 1000), ",") + `]`), execTail, 2001},
	{"emptyrows", execHead(`[{"name":"v"}]`), ",", same(`[]`), execTail, 2},
	// A cell's value that is an array, or an object, of numbers.
	{"arrayvalue", execHead(`[{"name":"v"}]`) + `[{"type":"text","value":[`, ",", same(`0`), `]}]` + execTail, 1},
	{"objectvalue", execHead(`[{"name":"v"}]`) + `[{"type":"text","value":{`, ",", func(i int) string { return `"` + strconv.Itoa(i) + `":0` }, `}}]` + execTail, 1},
	// A batch of many empty step results.
	{"batch", `{"baton":null,"results":[{"type":"ok","response":{"type":"batch","result":{"step_results":[`, ",", same(`{}`), `],"step_errors":[]}}}]}`, 2},
}

func execHead(cols string) string {
	return `{"baton":null,"results":[{"type":"ok","response":{"type":"execute","result":{"cols":` + cols + `,"rows":[`
}

const execTail = `]}}}]}`

// body returns the answer of s with as many elements as fit in maxBytes,
// or, when values is positive, with values/s.counted of them.
func (s hostileShape) body(maxBytes, values int64) []byte {
	var b strings.Builder
	b.WriteString(s.head)
	for i := 0; ; i++ {
		if values > 0 && int64(i) >= values/s.counted {
			break
		}
		e := s.elem(i)
		if int64(b.Len()+len(e)+len(s.sep)+len(s.tail)) > maxBytes {
			break
		}
		if i > 0 {
			b.WriteString(s.sep)
		}
		b.WriteString(e)
	}
	b.WriteString(s.tail)
	return []byte(b.String())
}

// query runs a query on db and reads every row of its answer.
func query(db *sql.DB) error {
	rows, err := db.QueryContext(context.Background(), "SELECT 1")
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	for rows.NextResultSet() {
		for rows.Next() {
		}
	}
	rows.Close()
	return rows.Err()
}

// allocated returns the bytes the process allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestGuardBoundsValues: an answer of many tiny values within the byte
// bound is refused as too large while it is read, before the client
// library decodes it (which cost hundreds of bytes per value, a GB and
// more for 32 MiB); a genuine answer as large as the node's own reads
// passes under a small byte bound.
func TestGuardBoundsValues(t *testing.T) {
	const maxBytes = 4 << 20
	for _, s := range hostileShapes {
		t.Run(s.name, func(t *testing.T) {
			body := s.body(maxBytes, 0)
			url, _ := serve(t, func(w http.ResponseWriter, _ *http.Request) { w.Write(body) })
			db := openDB(t, url, Limits{MaxAnswerBytes: maxBytes})
			var err error
			n := allocated(func() { err = query(db) })
			if !errors.Is(err, ErrAnswerTooLarge) {
				t.Errorf("%d-byte answer: got %v, want %v", len(body), err, ErrAnswerTooLarge)
			}
			// Reading up to the bound costs the answer's bytes a few
			// times over; decoding it cost far more.
			if n > 4*maxBytes {
				t.Errorf("%d-byte answer: %d bytes allocated, want at most %d", len(body), n, 4*maxBytes)
			}
		})
	}
	// A window of the chain's verification: 2000 records of 21 columns.
	cell := `{"type":"text","value":"` + strings.Repeat("h", 8) + `"}`
	row := `[` + strings.TrimSuffix(strings.Repeat(cell+",", 21), ",") + `]`
	genuine := []byte(execHead(`[`+strings.TrimSuffix(strings.Repeat(`{"name":"c"},`, 21), ",")+`]`) +
		strings.TrimSuffix(strings.Repeat(row+",", 2000), ",") + execTail)
	url, _ := serve(t, func(w http.ResponseWriter, _ *http.Request) { w.Write(genuine) })
	for _, tc := range []struct {
		name string
		lim  Limits
		want error
	}{
		{"genuine, default values", Limits{MaxAnswerBytes: 2 << 20}, nil},
		{"genuine, values for its rows", Limits{MaxAnswerValues: ValuesForRows(2000, 21)}, nil},
		{"genuine, values for half its rows", Limits{MaxAnswerValues: ValuesForRows(1000, 21)}, ErrAnswerTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := openDB(t, url, tc.lim).QueryContext(context.Background(), "SELECT 1")
			got := 0
			if err == nil {
				for rows.Next() {
					got++
				}
				err = rows.Err()
				rows.Close()
			}
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
			} else if err != nil || got != 2000 {
				t.Fatalf("%d rows, %v; want 2000", got, err)
			}
		})
	}
}

// TestCountValues: the values are counted across reads of any size,
// nothing within a string is, and an answer of exactly the bound passes.
func TestCountValues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{`{}`, 1},
		{`[1,2,3]`, 3},
		{`[[],[],{}]`, 6},
		{`{"a":[{"b":1,"c":2}],"d":null}`, 5},
		{`["a,b[c{d", "e\"f,[{", "\\", 1]`, 4},
		{`{"s":"\u0022,,,"}`, 1},
		{`"[,{"`, 0},
	} {
		for _, chunk := range []int{1, 2, 3, len(tc.in)} {
			b := &boundedBody{valuesLeft: tc.want}
			for i := 0; i < len(tc.in); i += chunk {
				if err := b.count([]byte(tc.in[i:min(i+chunk, len(tc.in))])); err != nil {
					t.Fatalf("%s in reads of %d: %v at the bound of %d", tc.in, chunk, err, tc.want)
				}
			}
			if b.valuesLeft != 0 {
				t.Errorf("%s in reads of %d: %d values, want %d", tc.in, chunk, tc.want-b.valuesLeft, tc.want)
			}
			b = &boundedBody{valuesLeft: tc.want - 1}
			if err := b.count([]byte(tc.in)); tc.want > 0 && !errors.Is(err, ErrAnswerTooLarge) {
				t.Errorf("%s under a bound of %d: got %v", tc.in, tc.want-1, err)
			}
		}
	}
}

// FuzzCountValues: the count of any bytes does not depend on how they
// are split into reads, and that of a JSON document is at least the
// number of its values below the top level (what the library decodes).
func FuzzCountValues(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"x\"["}]}`, `[[],[[]],{}]`, `"\\"`, `{"k":{}}`} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		whole := &boundedBody{valuesLeft: math.MaxInt64}
		whole.count(in)
		parts := &boundedBody{valuesLeft: math.MaxInt64}
		step := int(split)%7 + 1
		for i := 0; i < len(in); i += step {
			parts.count(in[i:min(i+step, len(in))])
		}
		if whole.valuesLeft != parts.valuesLeft {
			t.Fatalf("%q: %d values whole, %d in reads of %d", in, math.MaxInt64-whole.valuesLeft, math.MaxInt64-parts.valuesLeft, step)
		}
		var v any
		if json.Unmarshal(in, &v) != nil {
			return
		}
		if got, want := int64(math.MaxInt64-whole.valuesLeft), nested(v); got < want {
			t.Fatalf("%q: %d values counted, it holds %d", in, got, want)
		}
	})
}

// nested returns the number of values within v, a decoded JSON value.
func nested(v any) int64 {
	n := int64(0)
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			n += 1 + nested(e)
		}
	case map[string]any:
		for _, e := range v {
			n += 1 + nested(e)
		}
	}
	return n
}

// BenchmarkHostileAnswer decodes each hostile answer through the guard
// with the default limits: filling the byte bound (full), and with as
// many values as the guard lets through (atbound). peak-heap-MiB is the
// most heap the node held above what it held before, B/op what one such
// answer allocated.
func BenchmarkHostileAnswer(b *testing.B) {
	run := func(b *testing.B, body []byte) {
		url, _ := serve(b, func(w http.ResponseWriter, _ *http.Request) { w.Write(body) })
		db := openDB(b, url, Limits{})
		b.ReportMetric(float64(len(body)), "answer-bytes")
		peak := heapPeak()
		b.ResetTimer()
		for range b.N {
			query(db)
		}
		b.StopTimer()
		b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
	}
	for _, s := range hostileShapes {
		b.Run(s.name+"/full", func(b *testing.B) { run(b, s.body(DefaultMaxAnswerBytes, 0)) })
		b.Run(s.name+"/atbound", func(b *testing.B) { run(b, s.body(DefaultMaxAnswerBytes, Limits{}.withDefaults().MaxAnswerValues-64)) })
	}
	b.Run("longtext", func(b *testing.B) {
		run(b, []byte(execHead(`[{"name":"v"}]`)+`[{"type":"text","value":"`+strings.Repeat("a", DefaultMaxAnswerBytes-200)+`"}]`+execTail))
	})
}

// heapPeak samples the heap in use above what it is now until the
// returned function is called, which returns the largest excess seen.
func heapPeak() func() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapInuse
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var peak uint64
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base && m.HeapInuse-base > peak {
				peak = m.HeapInuse - base
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(stop); return <-done }
}
