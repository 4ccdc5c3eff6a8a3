package actors

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// Group is a set of edge agents that offer the same tools (a rack of
// sensor nodes): the model calls a tool of the group as {group}__{tool},
// and the least busy online member runs it.
type Group struct {
	Name string
	// Members are agent ids or path.Match patterns ("pi-*").
	Members []string
	// Tools, when set, limits the group's tools to these names.
	Tools []string
}

// Has reports whether agentID is a member of g.
func (g Group) Has(agentID string) bool {
	for _, m := range g.Members {
		if m == agentID {
			return true
		}
		if ok, _ := path.Match(m, agentID); ok {
			return true
		}
	}
	return false
}

func (g Group) offers(tool string) bool {
	if len(g.Tools) == 0 {
		return true
	}
	for _, t := range g.Tools {
		if t == tool {
			return true
		}
	}
	return false
}

// GroupToolbox offers the tools of Groups: one tool per name that online
// members share with the same schema. It is safe for concurrent use; put
// it before the EdgeToolbox, which answers for names nobody offers.
type GroupToolbox struct {
	Edges  *Edges
	Groups []Group
	// Logger gets one line per member left out of a group's tool because
	// its schema differs (per member, tool and schema).
	Logger *slog.Logger

	mu sync.Mutex
	// picks: group/tool → member → the pick sequence number of its last
	// pick (keys bounded by the config and the agents' tools; members by
	// the group's current members); seq counts picks.
	picks  map[string]map[string]uint64
	seq    uint64
	logged map[string]bool // group/tool/member/schema lines logged
}

// maxLoggedDiffs bounds the remembered schema-difference lines; past it
// they are logged again, which only costs log lines.
const maxLoggedDiffs = 1024

var _ Toolbox = (*GroupToolbox)(nil)

// groupMember is a member able to run one group tool now.
type groupMember struct {
	id    string
	gated bool // it speaks the start gate: a call can move off it
}

// holder is a callable member of a group that has one of its tools.
type holder struct {
	a    AgentInfo
	info wire.ToolInfo
	key  string // schemaKey of info.Parameters
}

// holders lists the callable members of g that have tool, sorted by id.
func holders(cat *Catalog, g Group, tool string) []holder {
	var hs []holder
	for _, a := range cat.Callable() {
		if !g.Has(a.ID) {
			continue
		}
		for _, t := range a.Tools {
			if t.Name == tool {
				hs = append(hs, holder{a: a, info: t, key: schemaKey(t.Parameters)})
				break
			}
		}
	}
	return hs
}

// sharedKey is the schema most holders have; ties go to the schema of the
// holder with the lowest id.
func sharedKey(hs []holder) string {
	if len(hs) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, h := range hs {
		count[h.key]++
	}
	best := hs[0].key
	for _, h := range hs {
		if count[h.key] > count[best] {
			best = h.key
		}
	}
	return best
}

// eligible is what group g offers as tool now: the tool's description
// (from the first member with the shared schema), the shared schema's key
// and the members that run it, sorted by id. A member with another schema
// is left out, and logged once.
func (b *GroupToolbox) eligible(cat *Catalog, g Group, tool string) (wire.ToolInfo, string, []groupMember) {
	hs := holders(cat, g, tool)
	key := sharedKey(hs)
	info, ms := b.keep(g, tool, hs, key)
	return info, key, ms
}

// keep is the holders whose schema is key, as members.
func (b *GroupToolbox) keep(g Group, tool string, hs []holder, key string) (wire.ToolInfo, []groupMember) {
	var info wire.ToolInfo
	var out []groupMember
	for _, h := range hs {
		if h.key != key {
			b.logDiff(g.Name, tool, h.a.ID, h.key)
			continue
		}
		if len(out) == 0 {
			info = h.info
		}
		out = append(out, groupMember{id: h.a.ID, gated: h.a.StartGate})
	}
	return info, out
}

func (b *GroupToolbox) logDiff(group, tool, agent, key string) {
	id := group + "\x00" + tool + "\x00" + agent + "\x00" + key
	b.mu.Lock()
	if b.logged == nil || len(b.logged) >= maxLoggedDiffs {
		b.logged = map[string]bool{}
	}
	seen := b.logged[id]
	b.logged[id] = true
	b.mu.Unlock()
	if !seen && b.Logger != nil {
		b.Logger.Warn("group member left out of a tool: its schema differs from the other members'", "group", group, "tool", tool, "agent", agent)
	}
}

// schemaKey is a tool schema's canonical JSON (encoding/json sorts map keys).
func schemaKey(schema map[string]any) string {
	if len(schema) == 0 {
		return "{}"
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return "?" // unreachable for a decoded schema
	}
	return string(b)
}

// toolNames lists the tools online members of g have, sorted.
func (b *GroupToolbox) toolNames(cat *Catalog, g Group) []string {
	seen := map[string]bool{}
	var names []string
	for _, a := range cat.Callable() {
		if !g.Has(a.ID) {
			continue
		}
		for _, t := range a.Tools {
			if !seen[t.Name] && g.offers(t.Name) {
				seen[t.Name] = true
				names = append(names, t.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// Defs implements Toolbox.
func (b *GroupToolbox) Defs() []llm.ToolDef {
	cat := b.Edges.Catalog()
	var defs []llm.ToolDef
	for _, g := range b.Groups {
		for _, tool := range b.toolNames(cat, g) {
			info, _, ms := b.eligible(cat, g, tool)
			if len(ms) == 0 {
				continue
			}
			params := info.Parameters
			if params == nil {
				params = map[string]any{"type": "object", "properties": map[string]any{}}
			}
			ids := make([]string, len(ms))
			for i, m := range ms {
				ids[i] = m.id
			}
			desc := info.Description + fmt.Sprintf(" (group %s: runs on the least busy of %s)", g.Name, strings.Join(ids, ", "))
			defs = append(defs, llm.ToolDef{Name: g.Name + ToolSep + tool, Description: desc, Parameters: params})
		}
	}
	return defs
}

// Resolve implements Toolbox.
func (b *GroupToolbox) Resolve(call llm.ToolCall) (Target, *skills.Output) {
	name, tool, _ := strings.Cut(call.Name, ToolSep)
	var g *Group
	for i := range b.Groups {
		if b.Groups[i].Name == name {
			g = &b.Groups[i]
		}
	}
	if g == nil || tool == "" || !g.offers(tool) {
		return Target{}, toolError(wire.ErrNotFound, fmt.Sprintf("tool %q not found", call.Name))
	}
	route := &GroupRoute{box: b, group: *g, tool: tool}
	info, m, ok := route.next(nil, true)
	if !ok {
		return Target{}, toolError(wire.ErrAgentOffline, fmt.Sprintf("tool %q: no online member of group %q offers %q now (members: %s)",
			call.Name, g.Name, tool, strings.Join(g.Members, ", ")))
	}
	return Target{AgentID: m.id, Tool: tool, Category: Category(info.Category, info.Name), OwnTimeoutMS: info.TimeoutMS,
		Schema: info.Parameters, Args: call.Arguments, Group: route, Gated: m.gated}, nil
}

// GroupRoute is how a call of a group tool finds its member, first and
// again when it moves.
type GroupRoute struct {
	box   *GroupToolbox
	group Group
	tool  string
	// key is the schema the call was checked against: a call moves only to
	// a member with the same one.
	key string
}

// Name is the group's name.
func (r *GroupRoute) Name() string { return r.group.Name }

// next picks the least busy eligible member not in tried. first fixes the
// schema for the later picks.
func (r *GroupRoute) next(tried map[string]bool, first bool) (wire.ToolInfo, groupMember, bool) {
	hs := holders(r.box.Edges.Catalog(), r.group, r.tool)
	if first {
		r.key = sharedKey(hs)
	}
	info, ms := r.box.keep(r.group, r.tool, hs, r.key)
	var ids []string
	byID := map[string]groupMember{}
	for _, m := range ms {
		if !tried[m.id] {
			ids = append(ids, m.id)
			byID[m.id] = m
		}
	}
	if len(ids) == 0 {
		return wire.ToolInfo{}, groupMember{}, false
	}
	key := r.group.Name + ToolSep + r.tool
	r.box.mu.Lock()
	defer r.box.mu.Unlock()
	if r.box.picks == nil {
		r.box.picks = map[string]map[string]uint64{}
	}
	last := r.box.picks[key]
	if last == nil {
		last = map[string]uint64{}
		r.box.picks[key] = last
	}
	id := pickLeastBusy(ids, r.box.Edges.InFlight, func(id string) uint64 { return last[id] })
	r.box.seq++
	last[id] = r.box.seq
	if len(last) > len(ms) {
		// Forget members that left the group.
		keep := make(map[string]bool, len(ms))
		for _, m := range ms {
			keep[m.id] = true
		}
		for k := range last {
			if !keep[k] {
				delete(last, k)
			}
		}
	}
	return info, byID[id], true
}

// pickLeastBusy returns the id in ids (sorted, not empty) with the fewest
// requests in flight; among equals, the one picked longest ago (lastPick:
// the sequence number of its last pick, 0 for never), so that every
// member takes its turn whatever the load of the others. (A rotation by a
// global turn counter over the changing set of equals could pass over a
// member again and again: with two members alternating busy, the third
// fell on the wrong turn every time.)
func pickLeastBusy(ids []string, inFlight func(string) int64, lastPick func(string) uint64) string {
	var pick string
	var least int64
	var oldest uint64
	for _, id := range ids {
		n, l := inFlight(id), lastPick(id)
		if pick == "" || n < least || (n == least && l < oldest) {
			pick, least, oldest = id, n, l
		}
	}
	return pick
}

// GroupView is one group as status shows it.
type GroupView struct {
	Name    string
	Members []string // as configured (ids or patterns)
	Online  []string // callable agents that are members, sorted
	Tools   []string // the group tools offered now, by their own names
}

// Views describes every group now.
func (b *GroupToolbox) Views() []GroupView {
	cat := b.Edges.Catalog()
	out := make([]GroupView, 0, len(b.Groups))
	for _, g := range b.Groups {
		v := GroupView{Name: g.Name, Members: append([]string(nil), g.Members...), Online: []string{}, Tools: []string{}}
		for _, a := range cat.Callable() {
			if g.Has(a.ID) {
				v.Online = append(v.Online, a.ID)
			}
		}
		for _, t := range b.toolNames(cat, g) {
			if _, _, ms := b.eligible(cat, g, t); len(ms) > 0 {
				v.Tools = append(v.Tools, t)
			}
		}
		out = append(out, v)
	}
	return out
}
