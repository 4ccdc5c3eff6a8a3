package toolbox

import (
	"context"
	"log/slog"
	"os"
	"slices"

	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/sandbox"
)

// Log keys of the sandbox messages.
const (
	logSandbox = "sandbox"
	logReason  = "reason"
	logUID     = "uid"
	logTools   = "tools"
)

// unconfinedRisk is said with every warning about unconfined tools.
const unconfinedRisk = "a tool call can read, change and delete anything this account can (as root: the whole machine, its secrets and credentials)"

// confine returns the sandbox bash runs in: b.Sandbox, with auto resolved
// to bubblewrap when a trial run works and to none otherwise. Trouble is
// logged loudly; an explicit sandbox that fails its trial stays as set, so
// every bash call fails rather than running unconfined.
func confine(b Builtin, lookPath func(string) (string, error), log *slog.Logger) string {
	bash := slices.ContainsFunc(b.Groups, func(g string) bool { return g == builtin.GroupCoding || g == builtin.GroupAll })
	kind := b.Sandbox
	switch {
	case !bash:
		if kind == sandbox.Auto {
			kind = sandbox.None
		}
		return kind
	case kind == sandbox.None:
		log.Warn("bash runs UNCONFINED: builtin.sandbox is none", logUID, os.Geteuid(), "risk", unconfinedRisk)
		return kind
	case kind == sandbox.Auto:
		if err := sandbox.Probe(context.Background(), sandbox.Bubblewrap, lookPath); err != nil {
			log.Warn("bash runs UNCONFINED: builtin.sandbox is auto and bubblewrap is not usable here; install bubblewrap (and allow user namespaces if not root) or set builtin.sandbox",
				logReason, err.Error(), logUID, os.Geteuid(), "risk", unconfinedRisk)
			return sandbox.None
		}
		log.Info("bash runs in a sandbox", logSandbox, sandbox.Bubblewrap)
		return sandbox.Bubblewrap
	}
	if err := sandbox.Probe(context.Background(), kind, lookPath); err != nil {
		log.Error("the configured sandbox does not work: every bash call will fail until it does", logSandbox, kind, logReason, err.Error())
	}
	return kind
}

// warnUnconfined warns, once, about the offered tools that run without an
// OS sandbox: bash with sandbox none, skill tools with sandboxing none.
// (MCP servers are warned about when they are connected.)
func warnUnconfined(ts *skills.Toolset, log *slog.Logger) {
	var names []string
	for _, l := range ts.List() {
		if !l.Offered || l.ShadowedBy != "" {
			continue
		}
		if ev := l.Def.Evoclaw; ev.Source == skills.SourceSkill && (ev.Sandboxing == "" || ev.Sandboxing == sandbox.None) {
			names = append(names, l.Def.Name)
		}
	}
	if len(names) > 0 {
		log.Warn("skill tools run UNCONFINED (sandboxing = \"none\" in their skill.toml)", logTools, names, logUID, os.Geteuid(), "risk", unconfinedRisk)
	}
}
