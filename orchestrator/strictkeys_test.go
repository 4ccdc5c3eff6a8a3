package orchestrator

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestStrictBodiesRefuseAmbiguousKeys: the endpoints that refuse unknown
// fields refuse a key given twice and a key spelled other than as
// documented, naming it in param; nothing of such a request is done.
// Before, encoding/json kept the last of two keys and matched keys
// without regard to case: {"id": "a", "id": "b"} added job b, and
// {"by": "alice", "by": "mallory"} was decided by mallory.
func TestStrictBodiesRefuseAmbiguousKeys(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript)})
	for _, tt := range []struct {
		path, body, param, msg string
	}{
		{"/v1/jobs", `{"id":"job-a","id":"job-b","schedule":"@daily","prompt":"p"}`, "id", "id: given more than once"},
		{"/v1/jobs", `{"ID":"job-c","schedule":"@daily","prompt":"p"}`, "ID", `unknown field "ID"`},
		{"/v1/jobs", `{"id":"job-d","schedule":"@daily","prompt":"p","agents":["a"],"agents":["b"]}`, "agents", "agents: given more than once"},
		{"/v1/chat", `{"text":"hi","text":"other"}`, "text", "text: given more than once"},
		{"/v1/chat", `{"Text":"hi"}`, "Text", `unknown field "Text"`},
		{"/v1/chat", `{"text":"hi","Temperature":0.5}`, "Temperature", `unknown field "Temperature"`},
		{"/v1/approvals/apr-0000000000000000/approve", `{"by":"alice","by":"mallory"}`, "by", "by: given more than once"},
		{"/v1/approvals/apr-0000000000000000/deny", `{"BY":"mallory"}`, "BY", `unknown field "BY"`},
		{"/v1/audit/sql", `{"sql":"SELECT 1","sql":"SELECT 2"}`, "sql", "sql: given more than once"},
		{"/v1/chat/questions/q-1", `{"answer":"yes","answer":"no"}`, "answer", "answer: given more than once"},
	} {
		t.Run(tt.path+" "+tt.body, func(t *testing.T) {
			resp := send(t, "POST", base+tt.path, token, tt.body)
			wantStatus(t, resp, 400)
			var e errorBody
			decodeBody(t, resp, &e)
			if deref(e.Error.Param) != tt.param || !strings.Contains(e.Error.Message, tt.msg) {
				t.Fatalf("error %+v param %q; want param %q and %q", e.Error, deref(e.Error.Param), tt.param, tt.msg)
			}
		})
	}
	for _, id := range []string{"job-a", "job-b", "job-c", "job-d"} {
		resp := send(t, "GET", base+"/v1/jobs/"+id, token, nil)
		wantStatus(t, resp, 404)
		resp.Body.Close()
	}
	// Keys as documented, an embedded struct's (the sampling hints) too,
	// and the same value under two keys are fine.
	resp := send(t, "POST", base+"/v1/chat", token, `{"text":"hi","temperature":0.5,"seed":3}`)
	wantStatus(t, resp, 200)
	resp.Body.Close()
	resp = send(t, "POST", base+"/v1/jobs", token, `{"id":"job-e","schedule":"@daily","prompt":"p","agents":["a"],"tools":["a"]}`)
	wantStatus(t, resp, 201)
	resp.Body.Close()
}

// FuzzDecodeStrictKeys: a body decodeStrict accepts names each of its
// top-level keys exactly as a field of the target does, once.
func FuzzDecodeStrictKeys(f *testing.F) {
	for _, s := range []string{`{"text":"hi"}`, `{"text":"a","text":"b"}`, `{"TEXT":"hi"}`, `{"text":"hi","seed":1}`,
		`{"text":"x","conversation_id":"c","stream":true,"top_p":0.5}`, `{"text":"\u0074"}`, `{"te\u0078t":"hi"}`,
		`{"text":"hi","ſtream":true}`, `[]`, `{"text":"hi"} {}`} {
		f.Add([]byte(s))
	}
	names := jsonNames(reflect.TypeOf(ChatRequest{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req ChatRequest
		if err := decodeStrict(b, &req, "a chat"); err != nil {
			return
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("%q accepted: not an object", b)
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("%q accepted: %v", b, err)
			}
			key := tok.(string)
			if !names[key] || seen[key] {
				t.Fatalf("%q accepted with key %q (known %v, seen %v)", b, key, names[key], seen[key])
			}
			seen[key] = true
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatalf("%q accepted: %v", b, err)
			}
		}
	})
}

// TestJSONNames: the keys of a struct, its embedded structs' included,
// are those encoding/json writes for it.
func TestJSONNames(t *testing.T) {
	type inner struct {
		Deep int `json:"deep"`
	}
	type outer struct {
		inner
		Named   string `json:"named,omitempty"`
		Plain   int
		Skipped int `json:"-"`
		Dash    int `json:"-,"`
		hidden  int
	}
	for _, v := range []any{outer{inner: inner{1}, Named: "n", Plain: 2, Skipped: 3, Dash: 4, hidden: 5}, ChatRequest{Text: "t"},
		DecisionRequest{By: "b", Note: "n"}, AuditSQLRequest{SQL: "s", Report: "r", Arg: "a", MaxRows: 1}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got := jsonNames(reflect.TypeOf(v))
		for k := range m {
			if !got[k] {
				t.Errorf("%T: %q written by encoding/json, not in %v", v, k, got)
			}
		}
		for k := range got {
			if _, ok := m[k]; !ok && reflect.TypeOf(v) == reflect.TypeOf(outer{}) {
				t.Errorf("%T: %q not written by encoding/json", v, k)
			}
		}
	}
	if jsonNames(reflect.TypeOf(map[string]any{})) != nil {
		t.Fatal("a map has names")
	}
}
