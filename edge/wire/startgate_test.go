package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestStartGateGoldens(t *testing.T) {
	c, err := DecodeCommand(golden(t, "command_tool_gated.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodeToolPayload(c.Payload)
	if err != nil || !p.StartGate || p.Tool != "temp" {
		t.Fatalf("gated tool payload %+v, %v", p, err)
	}
	r, err := DecodeReport("alex-eye", golden(t, "report_accepted.json"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := DecodeAccepted(r)
	if err != nil || a.RequestID != c.RequestID || r.RequestID() != c.RequestID {
		t.Fatalf("accepted %+v, %v: want request %s", a, err, c.RequestID)
	}
	s, err := DecodeCommand(golden(t, "command_start.json"))
	if err != nil || s.Command != CmdStart || s.RequestID != c.RequestID {
		t.Fatalf("start %+v, %v", s, err)
	}
	if sp, err := DecodeStartPayload(s.Payload); err != nil || !sp.Run {
		t.Fatalf("start payload %+v, %v", sp, err)
	}
	st, err := DecodeStatus("alex-eye", golden(t, "status_online_features.json"))
	if err != nil || !st.HasFeature(FeatureStartGate) {
		t.Fatalf("status %+v, %v", st, err)
	}
	// The extensions are left out when unused: an ungated command and a
	// status without features encode as before.
	b, _ := json.Marshal(ToolPayload{Tool: "x"})
	if strings.Contains(string(b), "start_gate") {
		t.Fatalf("ungated payload %s", b)
	}
	b, _ = json.Marshal(Status{AgentID: "a", Status: PresenceOffline})
	if strings.Contains(string(b), "features") {
		t.Fatalf("status %s", b)
	}
	if plain, _ := DecodeStatus("alex-eye", golden(t, "status_online.json")); plain.HasFeature(FeatureStartGate) {
		t.Fatal("a status without features has the start gate")
	}
}

func TestStartGateDecodeErrors(t *testing.T) {
	long := strings.Repeat("f", MaxFeatureLen+1)
	many := `"a"` + strings.Repeat(`,"a"`, MaxFeatures)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"accepted without request_id", decodeAccepted(`{}`), "request_id"},
		{"accepted with a number", decodeAccepted(`{"request_id": 7}`), "accepted"},
		{"accepted too long", decodeAccepted(`{"request_id": "` + strings.Repeat("r", MaxRequestIDLen+1) + `"}`), "request_id"},
		{"not an accepted report", func() error {
			_, err := DecodeAccepted(Report{ReportType: ReportResult, Payload: json.RawMessage(`{"request_id":"x"}`)})
			return err
		}(), "report_type"},
		{"start not an object", func() error { _, err := DecodeStartPayload([]byte(`true`)); return err }(), "start payload"},
		{"start run not a bool", func() error { _, err := DecodeStartPayload([]byte(`{"run": "yes"}`)); return err }(), "start payload"},
		{"too many features", decodeStatus(`{"status":"online","features":[` + many + `]}`), "features"},
		{"empty feature", decodeStatus(`{"status":"online","features":[""]}`), "features[0]"},
		{"long feature", decodeStatus(`{"status":"online","features":["` + long + `"]}`), "features[0]"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, tc.err, tc.want)
		}
	}
}

func decodeAccepted(payload string) error {
	_, err := DecodeAccepted(Report{ReportType: ReportAccepted, Payload: json.RawMessage(payload)})
	return err
}

func decodeStatus(b string) error {
	_, err := DecodeStatus("a", []byte(b))
	return err
}
