package sqlite

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestWriteTable(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	tests := []struct {
		name string
		res  Result
		want string
	}{
		{
			name: "no rows",
			res:  Result{Columns: []string{"a", "bb"}},
			want: "a | bb\n--+---\n(0 rows)\n",
		},
		{
			name: "values",
			res: Result{
				Columns: []string{"id", "tool", "exit_code"},
				Rows: [][]any{
					{int64(1), "shell", nil},
					{int64(22), "camera.snapshot", int64(0)},
				},
			},
			want: "" +
				"id | tool            | exit_code\n" +
				"---+-----------------+----------\n" +
				"1  | shell           | NULL\n" +
				"22 | camera.snapshot | 0\n" +
				"(2 rows)\n",
		},
		{
			name: "escapes, blobs, floats, wide runes",
			res: Result{
				Columns: []string{"v"},
				Rows: [][]any{
					{"line1\nline2\ttab"},
					{[]byte("utf-8 text")},
					{[]byte{0x00, 0xff}},
					{1.25},
					{"ünï"},
					{"\x1b[31mred\x7f\u0085"},
				},
			},
			want: "" +
				"v\n" +
				"---------------------\n" +
				"line1\\nline2\\ttab\n" +
				"utf-8 text\n" +
				"x'00ff'\n" +
				"1.25\n" +
				"ünï\n" +
				"\\x1b[31mred\\x7f\\u0085\n" +
				"(6 rows)\n",
		},
		{
			name: "invalid UTF-8 in text",
			res:  Result{Columns: []string{"v"}, Rows: [][]any{{"a\x9b[2Jb\xff\n"}}},
			want: "v\n---------------\na\\x9b[2Jb\\xff\\n\n(1 row)\n",
		},
		{
			name: "long cell cut at 80 runes",
			res:  Result{Columns: []string{"c"}, Rows: [][]any{{long}}},
			want: "c\n" + strings.Repeat("-", 80) + "\n" + strings.Repeat("x", 79) + "…\n(1 row)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.res.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Fatalf("got:\n%s\nwant:\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	res := Result{
		Columns: []string{"z", "a", "blob", "f"},
		Rows: [][]any{
			{int64(1), nil, []byte("text"), 0.5},
			{int64(2), "s\"q", []byte{0xff}, math.Inf(1)},
		},
	}
	var b strings.Builder
	if err := res.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	want := "[\n" +
		`{"z":1,"a":null,"blob":"text","f":0.5},` + "\n" +
		`{"z":2,"a":"s\"q","blob":"x'ff'","f":"+Inf"}` + "\n]\n"
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	var decoded []map[string]any
	if err := json.Unmarshal([]byte(b.String()), &decoded); err != nil || len(decoded) != 2 {
		t.Fatalf("output is not a JSON array of 2 objects: %v", err)
	}

	b.Reset()
	if err := (&Result{Columns: []string{"a"}}).WriteJSON(&b); err != nil || b.String() != "[]\n" {
		t.Fatalf("empty result: %q, %v", b.String(), err)
	}
}

func TestWriteCSV(t *testing.T) {
	t.Parallel()
	res := Result{
		Columns: []string{"id", "text", "maybe"},
		Rows: [][]any{
			{int64(1), "a,b", nil},
			{int64(2), "multi\nline \"q\"", []byte{0xfe}},
		},
	}
	var b strings.Builder
	if err := res.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	want := "id,text,maybe\n1,\"a,b\",\n2,\"multi\nline \"\"q\"\"\",x'fe'\n"
	if b.String() != want {
		t.Fatalf("got:\n%q\nwant:\n%q", b.String(), want)
	}
}
