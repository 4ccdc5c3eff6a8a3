package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Agent presence values of Status.Status.
const (
	PresenceOnline  = "online"
	PresenceOffline = "offline"
)

// Capabilities is the retained message on evoclaw/agents/{id}/capabilities:
// a one-line, free-text summary that an LLM reads.
type Capabilities struct {
	AgentID      string `json:"agent_id"`
	Capabilities string `json:"capabilities"`
}

// Status is the retained message on evoclaw/agents/{id}/status. evoclaw
// agents publish "online" on connect and set "offline" as their last will.
type Status struct {
	AgentID       string  `json:"agent_id"`
	Status        string  `json:"status"`
	Timestamp     int64   `json:"timestamp,omitempty"`
	UptimeSeconds int64   `json:"uptime_seconds,omitempty"`
	CPUPercent    float64 `json:"cpu_percent,omitempty"`
	MemoryMB      float64 `json:"memory_mb,omitempty"`
	// Features is an evoclaw extension: the optional parts of the wire
	// this agent speaks (FeatureStartGate). Other peers ignore it.
	Features []string `json:"features,omitempty"`
	// Host and Version are evoclaw extensions of an online status: the
	// agent's host name and its evoclaw version, which the node records
	// in the agent's agent_online event. Both optional (other peers send
	// neither and ignore them), and the agent's word: DecodeStatus cuts
	// them to MaxHostLen and MaxVersionLen and replaces control
	// characters with U+FFFD.
	Host    LooseString `json:"host,omitempty"`
	Version LooseString `json:"version,omitempty"`
	// NotRecording is an evoclaw extension of an online status: why the
	// agent's own audit trail cannot write now (a full disk, a card
	// turned read-only), so that it refuses every command it cannot
	// record; absent when it can. Optional and the agent's word, as Host:
	// DecodeStatus cuts it to MaxNotRecordingLen, replaces control
	// characters and drops it from an offline status; a value of another
	// JSON type reads as absent.
	NotRecording LooseString `json:"not_recording,omitempty"`
}

// LooseString is an optional string field of an evoclaw extension: a
// value of another JSON type (another peer's field of the same name, say a
// schema's version number) reads as "", so that it never makes the whole
// message refused.
type LooseString string

// UnmarshalJSON reads a JSON string; anything else is "".
func (l *LooseString) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) != nil {
		s = ""
	}
	*l = LooseString(s)
	return nil
}

// MaxHostLen and MaxVersionLen bound Status.Host and Status.Version. A
// DNS name is at most 253 bytes, a Linux host name 64; a release or Go
// pseudo-version with a "+dirty" mark some 60.
const (
	MaxHostLen    = 255
	MaxVersionLen = 128
	// MaxNotRecordingLen bounds Status.NotRecording: an error of the
	// audit store naming its file and cause fits.
	MaxNotRecordingLen = 512
)

// BoundText is s as one line of valid UTF-8 of at most max bytes: invalid
// bytes and control characters become U+FFFD, and what does not fit is
// cut at a character boundary. Fields an agent says about itself go
// through it, so that an audit row or a log line quotes no more.
func BoundText(s string, max int) string {
	clean := utf8.ValidString(s)
	for _, r := range s {
		if unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if !clean {
		s = strings.Map(func(r rune) rune {
			if r == utf8.RuneError || unicode.IsControl(r) {
				return utf8.RuneError
			}
			return r
		}, strings.ToValidUTF8(s, string(utf8.RuneError)))
	}
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// HasFeature reports whether s lists feature f.
func (s Status) HasFeature(f string) bool {
	for _, x := range s.Features {
		if x == f {
			return true
		}
	}
	return false
}

// MaxCapabilitiesLen bounds the capability line shown to an LLM.
const MaxCapabilitiesLen = 1024

// DecodeCapabilities parses a capabilities message from topicAgent.
func DecodeCapabilities(topicAgent string, b []byte) (Capabilities, error) {
	var c Capabilities
	if err := decodeFromAgent("capabilities", b, &c, &c.AgentID, topicAgent); err != nil {
		return Capabilities{}, err
	}
	if len(c.Capabilities) > MaxCapabilitiesLen {
		return Capabilities{}, &DecodeError{What: "capabilities", Field: "capabilities", Msg: fmt.Sprintf("%d bytes, at most %d allowed", len(c.Capabilities), MaxCapabilitiesLen)}
	}
	return c, nil
}

// DecodeStatus parses a status message from topicAgent. A status other than
// online or offline is refused.
func DecodeStatus(topicAgent string, b []byte) (Status, error) {
	var s Status
	if err := decodeFromAgent("status", b, &s, &s.AgentID, topicAgent); err != nil {
		return Status{}, err
	}
	switch s.Status {
	case PresenceOnline, PresenceOffline:
	case "":
		return Status{}, &DecodeError{What: "status", Field: "status", Msg: "required"}
	default:
		return Status{}, &DecodeError{What: "status", Field: "status", Msg: fmt.Sprintf("unknown value %q (want online or offline)", s.Status)}
	}
	if len(s.Features) > MaxFeatures {
		return Status{}, &DecodeError{What: "status", Field: "features", Msg: fmt.Sprintf("%d entries, at most %d", len(s.Features), MaxFeatures)}
	}
	for i, f := range s.Features {
		if f == "" || len(f) > MaxFeatureLen {
			return Status{}, &DecodeError{What: "status", Field: fmt.Sprintf("features[%d]", i), Msg: fmt.Sprintf("1 to %d bytes", MaxFeatureLen)}
		}
	}
	// Cut, not refused: a status says whether the agent is there, which
	// matters more than what it says of its host.
	s.Host, s.Version = LooseString(BoundText(string(s.Host), MaxHostLen)), LooseString(BoundText(string(s.Version), MaxVersionLen))
	s.NotRecording = LooseString(BoundText(string(s.NotRecording), MaxNotRecordingLen))
	if s.Status != PresenceOnline {
		s.NotRecording = "" // an agent offline records nothing anyway
	}
	return s, nil
}

// decodeFromAgent decodes b, a message of what from topicAgent's topic, into
// v; *agentID, v's agent_id, must be empty or topicAgent and becomes
// topicAgent.
func decodeFromAgent(what string, b []byte, v any, agentID *string, topicAgent string) error {
	if err := decodeObject(what, b, v); err != nil {
		return err
	}
	if err := checkAgent(what, *agentID, topicAgent); err != nil {
		return err
	}
	*agentID = topicAgent
	return nil
}

func checkAgent(what, got, topicAgent string) error {
	if got != "" && got != topicAgent {
		return &DecodeError{What: what, Field: "agent_id", Msg: fmt.Sprintf("%q does not match topic agent %q", got, topicAgent)}
	}
	return nil
}
