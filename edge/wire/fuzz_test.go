package wire

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to every decoder of outside input. They
// must never panic, and anything they accept must satisfy their invariants.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"", "bad"} {
		files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "wire", dir, "*.json"))
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sameDecoding(t, b)
		if c, err := DecodeCommand(b); err == nil {
			if c.Command == "" || c.RequestID == "" || len(c.RequestID) > MaxRequestIDLen || len(c.Payload) == 0 || c.ExpiresAt < 0 || c.TTLMS < 0 {
				t.Fatalf("accepted invalid command %+v", c)
			}
			if p, err := DecodeToolPayload(c.Payload); err == nil && (p.Tool == "" || p.TimeoutMS < 0) {
				t.Fatalf("accepted invalid tool payload %+v", p)
			}
			_, _ = DecodeStartPayload(c.Payload)
			if p, err := DecodePromptPayload(c.Payload); err == nil && p.Delegation != nil {
				d := p.Delegation
				if d.Token == "" || len(d.Token) > MaxDelegationToken || len(d.Chain) == 0 || len(d.Chain) > MaxDelegationChain || len(d.Tools) > MaxRemoteTools {
					t.Fatalf("accepted invalid delegation %+v", d)
				}
				for _, rt := range d.Tools {
					if ValidateAgentID(rt.AgentID) != nil || (rt.Tool == "") != rt.Prompt || rt.TimeoutMS < 0 {
						t.Fatalf("accepted invalid remote tool %+v", rt)
					}
				}
			}
			if r, err := DecodeDelegateResult(c.Payload); err == nil && (r.RequestID == "" || len(r.RequestID) > MaxRequestIDLen) {
				t.Fatalf("accepted a delegate result without a valid request_id %+v", r)
			}
		}
		if r, err := DecodeReport("a", b); err == nil {
			if r.AgentID != "a" {
				t.Fatalf("report from topic agent a names %q", r.AgentID)
			}
			_ = r.RequestID()
			if res, err := DecodeToolResult(r); err == nil {
				if res.Status != StatusSuccess && res.Status != StatusError {
					t.Fatalf("accepted status %q", res.Status)
				}
				if res.ResultBytes < 0 || res.Dropped.check("tool result") != nil {
					t.Fatalf("accepted invalid sizes or hash %d %+v", res.ResultBytes, res.Dropped)
				}
				_ = DroppedNote(res.Dropped, res.Status, res.ErrorType, res.ResultBytes)
			}
			_, _ = DecodeToolsList(r)
			_, _ = DecodeErrorPayload(r)
			if p, err := DecodePromptResult(r); err == nil && p.Dropped.check("prompt result") != nil {
				t.Fatalf("accepted invalid prompt result %+v", p.Dropped)
			}
			if a, err := DecodeAccepted(r); err == nil && (a.RequestID == "" || len(a.RequestID) > MaxRequestIDLen) {
				t.Fatalf("accepted invalid accepted report %+v", a)
			}
			if d, err := DecodeDelegateRequest(r); err == nil {
				if r.ReportType != ReportDelegate || d.RequestID == "" || len(d.RequestID) > MaxRequestIDLen || d.Token == "" ||
					len(d.Token) > MaxDelegationToken || ValidateAgentID(d.AgentID) != nil || (d.Tool == "") == (d.Query == "") ||
					len(d.Query) > MaxDelegateQuery || d.TimeoutMS < 0 || (d.Tool != "" && len(d.Parameters) == 0) || (d.Query != "" && d.Parameters != nil) {
					t.Fatalf("accepted invalid delegate request %+v", d)
				}
			}
			if p, err := DecodeProgress(r); err == nil {
				if r.ReportType != ReportProgress || p.RequestID == "" || len(p.RequestID) > MaxRequestIDLen || p.Seq < 1 ||
					p.Omitted < 0 || len(p.Output) > MaxProgressOutput ||
					(p.Stream != "" && p.Stream != StreamStdout && p.Stream != StreamStderr) {
					t.Fatalf("accepted invalid progress %+v", p)
				}
			}
		}
		if s, err := DecodeStatus("a", b); err == nil && (s.Status != PresenceOnline && s.Status != PresenceOffline || len(s.Features) > MaxFeatures ||
			!validBoundText(string(s.Host), MaxHostLen) || !validBoundText(string(s.Version), MaxVersionLen) ||
			!validBoundText(string(s.NotRecording), MaxNotRecordingLen) || (s.Status == PresenceOffline && s.NotRecording != "")) {
			t.Fatalf("accepted status %+v", s)
		}
		_, _ = DecodeCapabilities("a", b)
		_, _, _ = ParseTopic(string(b))
	})
}
