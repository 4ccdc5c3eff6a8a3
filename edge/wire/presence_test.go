package wire

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestStatusHostAndVersion: the optional host and version of an online
// status are read when present, absent from the public agent's status, and
// cut and cleaned (never refused) when an agent sends more than the bounds.
func TestStatusHostAndVersion(t *testing.T) {
	long := strings.Repeat("h", MaxHostLen+40)
	longVer := strings.Repeat("é", MaxVersionLen) // 2 bytes each: cut on a boundary
	for _, tc := range []struct {
		name              string
		msg               []byte
		wantHost, wantVer string
	}{
		{"golden", golden(t, "status_online_host.json"), "pi-kitchen.lan", "v1.4.0"},
		{"public agent", golden(t, "status_online.json"), "", ""},
		{"will", golden(t, "status_offline_will.json"), "", ""},
		{"too long", []byte(`{"status":"online","host":"` + long + `","version":"` + longVer + `"}`), long[:MaxHostLen], longVer[:MaxVersionLen]},
		{"control characters", []byte(`{"status":"online","host":"a\nb\u0000c","version":"v1\u001b[2J"}`), "a\uFFFDb\uFFFDc", "v1\uFFFD[2J"},
		{"invalid utf-8", []byte("{\"status\":\"online\",\"host\":\"a\xffb\"}"), "a\uFFFDb", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := DecodeStatus("alex-eye", tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(s.Host) != tc.wantHost || string(s.Version) != tc.wantVer {
				t.Fatalf("host %q version %q, want %q %q", s.Host, s.Version, tc.wantHost, tc.wantVer)
			}
		})
	}
	// Another peer's host or version of another type is taken as absent,
	// and its status read as before.
	for _, msg := range []string{`{"status":"online","host":5,"version":2}`, `{"status":"online","host":{"name":"x"},"version":null}`} {
		if s, err := DecodeStatus("alex-eye", []byte(msg)); err != nil || s.Status != PresenceOnline || s.Host != "" || s.Version != "" {
			t.Fatalf("%s: %+v, %v", msg, s, err)
		}
	}
	// The other fields' errors still name them as the message does.
	if _, err := DecodeStatus("alex-eye", []byte(`{"status":"online","features":5}`)); err == nil || !strings.Contains(err.Error(), `field "features"`) {
		t.Fatalf("features of type number: %v", err)
	}
	// Unset, the fields are left out: the status encodes as before.
	b, _ := json.Marshal(Status{AgentID: "a", Status: PresenceOnline})
	if strings.Contains(string(b), "host") || strings.Contains(string(b), "version") {
		t.Fatalf("status %s", b)
	}
}

// TestStatusNotRecording: an online status may say why the agent's audit
// trail cannot write; the field is read when a string, cut and cleaned
// when long, taken as absent when of another type or in an offline status,
// and left out of a status that says none, so the public agent's status
// reads and encodes as before.
func TestStatusNotRecording(t *testing.T) {
	long := strings.Repeat("ü", MaxNotRecordingLen) // 2 bytes each
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"disk full", `{"status":"online","not_recording":"its disk is full: 12 KiB free"}`, "its disk is full: 12 KiB free"},
		{"absent", `{"status":"online"}`, ""},
		{"too long", `{"status":"online","not_recording":"` + long + `"}`, long[:MaxNotRecordingLen]},
		{"control characters", `{"status":"online","not_recording":"a\nb\u001b[2J"}`, "a\uFFFDb\uFFFD[2J"},
		{"a number", `{"status":"online","not_recording":1}`, ""},
		{"true", `{"status":"online","not_recording":true}`, ""},
		{"an object", `{"status":"online","not_recording":{"why":"x"}}`, ""},
		{"offline", `{"status":"offline","not_recording":"disk full"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := DecodeStatus("alex-eye", []byte(tc.msg))
			if err != nil {
				t.Fatal(err)
			}
			if string(s.NotRecording) != tc.want {
				t.Fatalf("not_recording %q, want %q", s.NotRecording, tc.want)
			}
		})
	}
	s, err := DecodeStatus("alex-eye", golden(t, "status_online_not_recording.json"))
	if err != nil || s.NotRecording != "its disk is full: 12 KiB free" || s.Host != "pi-kitchen.lan" {
		t.Fatalf("golden: %+v, %v", s, err)
	}
	s, err = DecodeStatus("alex-eye", golden(t, "status_online.json"))
	if err != nil || s.NotRecording != "" || s.Status != PresenceOnline {
		t.Fatalf("the public agent's status: %+v, %v", s, err)
	}
	b, _ := json.Marshal(Status{AgentID: "a", Status: PresenceOnline})
	if strings.Contains(string(b), "not_recording") {
		t.Fatalf("status %s", b)
	}
}

func TestBoundText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"plain", 3, "pla"},
		{"aé", 2, "a"},
		{"a\tb", 10, "a\uFFFDb"},
		{"\xff\xfe", 10, "\uFFFD"},
		{"", 5, ""},
	} {
		if got := BoundText(tc.in, tc.max); got != tc.want {
			t.Errorf("BoundText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

// validBoundText says whether s is what BoundText lets through.
func validBoundText(s string, max int) bool {
	if len(s) > max || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsControl) < 0
}
