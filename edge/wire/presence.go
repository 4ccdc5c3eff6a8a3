package wire

import "fmt"

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
	if err := decodeObject("capabilities", b, &c); err != nil {
		return Capabilities{}, err
	}
	if err := checkAgent("capabilities", c.AgentID, topicAgent); err != nil {
		return Capabilities{}, err
	}
	c.AgentID = topicAgent
	if len(c.Capabilities) > MaxCapabilitiesLen {
		return Capabilities{}, &DecodeError{What: "capabilities", Field: "capabilities", Msg: fmt.Sprintf("%d bytes, at most %d allowed", len(c.Capabilities), MaxCapabilitiesLen)}
	}
	return c, nil
}

// DecodeStatus parses a status message from topicAgent. A status other than
// online or offline is refused.
func DecodeStatus(topicAgent string, b []byte) (Status, error) {
	var s Status
	if err := decodeObject("status", b, &s); err != nil {
		return Status{}, err
	}
	if err := checkAgent("status", s.AgentID, topicAgent); err != nil {
		return Status{}, err
	}
	s.AgentID = topicAgent
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
	return s, nil
}

func checkAgent(what, got, topicAgent string) error {
	if got != "" && got != topicAgent {
		return &DecodeError{What: what, Field: "agent_id", Msg: fmt.Sprintf("%q does not match topic agent %q", got, topicAgent)}
	}
	return nil
}
