package wire

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestDelegationGolden(t *testing.T) {
	c, err := DecodeCommand(golden(t, "command_prompt_delegation.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodePromptPayload(c.Payload)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Delegation
	if d == nil || d.Token != "dlg-5f1c0e6b2a9d4c37" || len(d.Chain) != 1 || d.Chain[0] != "pi1" || len(d.Tools) != 2 {
		t.Fatalf("delegation %+v", d)
	}
	if !d.Tools[0].Prompt || d.Tools[0].Tool != "" || d.Tools[1].Tool != "sysinfo" || d.Tools[1].TimeoutMS != 9000 {
		t.Fatalf("tools %+v", d.Tools)
	}
	// A prompt without it decodes as before (the public agent's).
	c, err = DecodeCommand(golden(t, "command_prompt.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := DecodePromptPayload(c.Payload); err != nil || p.Delegation != nil {
		t.Fatalf("plain prompt: %+v, %v", p, err)
	}

	for _, tt := range []struct {
		file              string
		tool, query, args string
		timeoutMS         int64
	}{
		{"report_delegate.json", "disk_usage", "", `{"path": "/"}`, 8500},
		{"report_delegate_prompt.json", "", "look around", "", 63500},
	} {
		t.Run(tt.file, func(t *testing.T) {
			r, err := DecodeReport("pi1", golden(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			req, err := DecodeDelegateRequest(r)
			if err != nil {
				t.Fatal(err)
			}
			if req.AgentID != "pi2" || req.Token != "dlg-5f1c0e6b2a9d4c37" || req.Tool != tt.tool || req.Query != tt.query ||
				string(req.Parameters) != tt.args || req.TimeoutMS != tt.timeoutMS || r.RequestID() != req.RequestID {
				t.Fatalf("request %+v", req)
			}
		})
	}

	c, err = DecodeCommand(golden(t, "command_delegate_result.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := DecodeDelegateResult(c.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequestID != c.RequestID || res.Status != StatusError || res.ErrorType != ErrPermissionDenied || !strings.Contains(res.Error, "pi1 → pi2 → pi1") {
		t.Fatalf("result %+v", res)
	}
}

func TestDelegationRejects(t *testing.T) {
	report := func(payload string) Report {
		return Report{AgentID: "pi1", ReportType: ReportDelegate, Payload: json.RawMessage(payload)}
	}
	long := strings.Repeat("x", MaxDelegationToken+1)
	for _, tt := range []struct {
		name, payload, field string
	}{
		{"no request_id", `{"token":"t","agent_id":"pi2","tool":"a"}`, "request_id"},
		{"no token", `{"request_id":"r","agent_id":"pi2","tool":"a"}`, "token"},
		{"long token", `{"request_id":"r","token":"` + long + `","agent_id":"pi2","tool":"a"}`, "token"},
		{"neither tool nor query", `{"request_id":"r","token":"t","agent_id":"pi2"}`, "tool"},
		{"both", `{"request_id":"r","token":"t","agent_id":"pi2","tool":"a","query":"q"}`, "tool"},
		{"parameters with query", `{"request_id":"r","token":"t","agent_id":"pi2","query":"q","parameters":{"a":1}}`, "parameters"},
		{"parameters not an object", `{"request_id":"r","token":"t","agent_id":"pi2","tool":"a","parameters":[1]}`, "parameters"},
		{"bad agent", `{"request_id":"r","token":"t","agent_id":"pi2/#","tool":"a"}`, "agent_id"},
		{"no agent", `{"request_id":"r","token":"t","tool":"a"}`, "agent_id"},
		{"negative timeout", `{"request_id":"r","token":"t","agent_id":"pi2","tool":"a","timeout_ms":-1}`, "timeout_ms"},
		{"wrong type", `{"request_id":"r","token":"t","agent_id":"pi2","tool":7}`, "tool"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeDelegateRequest(report(tt.payload))
			var de *DecodeError
			if !errors.As(err, &de) || de.Field != tt.field {
				t.Fatalf("err = %v, want a DecodeError on field %q", err, tt.field)
			}
		})
	}
	if _, err := DecodeDelegateRequest(Report{ReportType: ReportResult, Payload: json.RawMessage(`{}`)}); err == nil {
		t.Fatal("a result report decoded as a delegate request")
	}

	prompt := func(delegation string) error {
		_, err := DecodePromptPayload([]byte(`{"prompt":"hi","enable_tools":true,"delegation":` + delegation + `}`))
		return err
	}
	for _, tt := range []struct{ name, delegation, field string }{
		{"no token", `{"chain":["pi1"],"tools":[]}`, "delegation.token"},
		{"no chain", `{"token":"t","tools":[]}`, "delegation.chain"},
		{"long chain", `{"token":"t","chain":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}`, "delegation.chain"},
		{"bad chain id", `{"token":"t","chain":["a b"]}`, "delegation.chain[0]"},
		{"tool and prompt", `{"token":"t","chain":["a"],"tools":[{"agent_id":"b","tool":"x","prompt":true}]}`, "delegation.tools[0].tool"},
		{"neither", `{"token":"t","chain":["a"],"tools":[{"agent_id":"b"}]}`, "delegation.tools[0].tool"},
		{"bad tool agent", `{"token":"t","chain":["a"],"tools":[{"agent_id":"","tool":"x"}]}`, "delegation.tools[0].agent_id"},
		{"negative timeout", `{"token":"t","chain":["a"],"tools":[{"agent_id":"b","tool":"x","timeout_ms":-5}]}`, "delegation.tools[0].timeout_ms"},
	} {
		t.Run("prompt "+tt.name, func(t *testing.T) {
			var de *DecodeError
			if err := prompt(tt.delegation); !errors.As(err, &de) || de.Field != tt.field {
				t.Fatalf("err = %v, want a DecodeError on field %q", err, tt.field)
			}
		})
	}
	var tools []string
	for range MaxRemoteTools + 1 {
		tools = append(tools, `{"agent_id":"b","tool":"x"}`)
	}
	if err := prompt(`{"token":"t","chain":["a"],"tools":[` + strings.Join(tools, ",") + `]}`); err == nil || !strings.Contains(err.Error(), "at most 256") {
		t.Fatalf("too many tools: %v", err)
	}

	for _, tt := range []struct{ file, want string }{
		{"report_delegate_tool_and_query.json", "give either tool"},
		{"report_delegate_no_token.json", `"token": required`},
	} {
		r, err := DecodeReport("pi1", golden(t, filepath.Join("bad", tt.file)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeDelegateRequest(r); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("%s: err = %v, want %q", tt.file, err, tt.want)
		}
	}
	c, err := DecodeCommand(golden(t, filepath.Join("bad", "command_prompt_delegation_bad_chain.json")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodePromptPayload(c.Payload); err == nil || !strings.Contains(err.Error(), "delegation.chain[0]") {
		t.Fatalf("bad chain: %v", err)
	}
	c, err = DecodeCommand(golden(t, filepath.Join("bad", "command_delegate_result_no_request_id.json")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeDelegateResult(c.Payload); err == nil || !strings.Contains(err.Error(), "request_id") {
		t.Fatalf("result without request_id: %v", err)
	}
}
