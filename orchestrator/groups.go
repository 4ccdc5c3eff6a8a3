package orchestrator

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// GroupConf is one [[groups]] entry: edge agents that offer the same tools,
// called as one ({name}__{tool}) on the least busy online member.
type GroupConf struct {
	Name string `toml:"name"`
	// Members are agent ids or glob patterns (path.Match: *, ?, [a-z]).
	Members []string `toml:"members"`
	// Tools, when set, limits the group's tools to these names.
	Tools []string `toml:"tools"`
}

// validateGroups checks the [[groups]] entries.
func validateGroups(gs []GroupConf) []error {
	var errs []error
	names := map[string]bool{}
	for i, g := range gs {
		at := fmt.Sprintf("groups[%d]", i)
		if g.Name != "" {
			at = fmt.Sprintf("groups[%d] (%s)", i, g.Name)
		}
		switch err := wire.ValidateAgentID(g.Name); {
		case g.Name == "":
			errs = append(errs, fmt.Errorf("%s: name is required", at))
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: name: %w", at, err))
		case wire.ValidateToolPrefix(g.Name) != nil:
			errs = append(errs, fmt.Errorf("%s: name %w", at, wire.ValidateToolPrefix(g.Name)))
		case names[g.Name]:
			errs = append(errs, fmt.Errorf("%s: name declared twice", at))
		}
		names[g.Name] = true
		if len(g.Members) == 0 {
			errs = append(errs, fmt.Errorf("%s: members is empty; list agent ids or patterns such as \"pi-*\"", at))
		}
		seen := map[string]bool{}
		for _, m := range g.Members {
			if err := validMember(m); err != nil {
				errs = append(errs, fmt.Errorf("%s: member %q: %w", at, m, err))
			}
			if seen[m] {
				errs = append(errs, fmt.Errorf("%s: member %q listed twice", at, m))
			}
			seen[m] = true
		}
		tools := map[string]bool{}
		for _, t := range g.Tools {
			if t == "" || tools[t] {
				errs = append(errs, fmt.Errorf("%s: tools: %q is empty or listed twice", at, t))
			}
			tools[t] = true
		}
	}
	return errs
}

// validMember accepts an agent id, or a path.Match pattern whose other
// characters are those of agent ids.
func validMember(m string) error {
	if !strings.ContainsAny(m, "*?[") {
		return wire.ValidateAgentID(m)
	}
	if _, err := path.Match(m, ""); err != nil {
		return errors.New("not a valid pattern (path.Match syntax: *, ?, [a-z])")
	}
	for _, c := range m {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-*?[]^!", c)) {
			return fmt.Errorf("character %q can match no agent id", c)
		}
	}
	return nil
}

// actorGroups converts the configuration for the GroupToolbox.
func actorGroups(gs []GroupConf) []actors.Group {
	out := make([]actors.Group, len(gs))
	for i, g := range gs {
		out[i] = actors.Group{Name: g.Name, Members: g.Members, Tools: g.Tools}
	}
	return out
}

// GroupStatus is one group in Status.
type GroupStatus struct {
	Name string `json:"name"`
	// Members are the configured ids and patterns.
	Members []string `json:"members"`
	// Online are the agents calls are sent to now that are members.
	Online []string `json:"online"`
	// Tools are the group's tools offered now (called as NAME__TOOL).
	Tools []string `json:"tools"`
}

// groupStatus lists the groups for Status.
func (n *Node) groupStatus() []GroupStatus {
	out := []GroupStatus{}
	if n.groups == nil {
		return out
	}
	for _, v := range n.groups.Views() {
		out = append(out, GroupStatus{Name: v.Name, Members: v.Members, Online: v.Online, Tools: v.Tools})
	}
	return out
}
