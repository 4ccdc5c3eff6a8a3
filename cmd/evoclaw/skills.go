package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/shipped"
)

// nodeConfigGiven is the error of `skills list --config` given a node's
// evoclaw.toml (keys agent.toml does not know, agentErr, and it loads as
// a node's): it names the command that lists the node's own skill tools.
// Nil for any other file. Before, the agent.toml loader refused the
// node's [broker] or [http] as unknown keys, which said nothing of what to
// run instead.
func nodeConfigGiven(path string, agentErr error) error {
	if !strings.Contains(agentErr.Error(), "unknown keys") {
		return nil
	}
	cfg, err := orchestrator.LoadConfig(path)
	if err != nil {
		return nil
	}
	cmd := "evoclaw skills list"
	if len(cfg.Skills.Permissions) > 0 {
		cmd += " --permissions " + strings.Join(cfg.Skills.Permissions, ",")
	}
	for _, d := range cfg.Skills.Dirs {
		if strings.Trim(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") != "" {
			d = "'" + strings.ReplaceAll(d, "'", `'\''`) + "'" // as a shell reads it
		}
		cmd += " " + d
	}
	if len(cfg.Skills.Dirs) == 0 {
		return fmt.Errorf("%w: %s is a node's evoclaw.toml, and --config takes an agent's agent.toml; this node has no [skills] dirs", errUsage, path)
	}
	return fmt.Errorf("%w: %s is a node's evoclaw.toml, and --config takes an agent's agent.toml; the node's own skill tools: %s", errUsage, path, cmd)
}

// errBrokenSkills makes `skills validate` exit non-zero after it has
// reported every problem.
var errBrokenSkills = errors.New("some skills are broken")

const skillsUsage = "evoclaw skills install NAME DIR | validate DIR... | list [--permissions a,b] DIR... | list --config agent.toml"

func cmdSkills(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, skillsUsage)
	}
	switch args[0] {
	case "install":
		if slices.ContainsFunc(args[1:], func(a string) bool { return isHelp(a) && a != "help" }) {
			fmt.Fprint(stdout, "usage:\n"+usageOf("skills install"))
			return nil
		}
		if i := slices.IndexFunc(args[1:], func(a string) bool { return strings.HasPrefix(a, "-") }); i >= 0 {
			// Not a directory to write to: "--help" once became one.
			return fmt.Errorf("%w: evoclaw skills install takes no flags, got %q", errUsage, args[1+i])
		}
		if len(args) != 3 {
			return fmt.Errorf("%w: evoclaw skills install NAME DIR (shipped skills: %v)", errUsage, shipped.Names())
		}
		// Install replaces files: here they may hold a person's edits.
		if existing := filepath.Join(args[2], args[1]); slices.Contains(shipped.Names(), args[1]) {
			if _, err := os.Lstat(existing); err == nil {
				return fmt.Errorf("skill %s is already in %s: nothing written, since that would replace any change made there; "+
					"remove the directory first to install the shipped one again, or name another DIR", args[1], existing)
			}
		}
		dest, err := shipped.Install(args[1], args[2])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "installed skill %s in %s\n", args[1], dest)
		return nil
	case "validate":
		return skillsValidate(args[1:], stdout, stderr)
	case "list":
		return skillsList(args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: unknown skills command %q: %s", errUsage, args[0], skillsUsage)
}

// skillsValidate loads every skill under the directories, prints each
// problem with file, line, field and expectation, and summarises.
func skillsValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("skills validate", stderr)
	dirs, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return fmt.Errorf("%w: evoclaw skills validate DIR...", errUsage)
	}
	// What is printed is the skills' to write (a skill under review may
	// be anyone's): its version, its directory's name and the values its
	// errors quote go through termLine.
	loaded, errs := skills.NewCatalog(dirs...).Skills()
	for _, s := range loaded {
		fmt.Fprintf(stdout, "ok      %s %s (%d tools) in %s\n", termLine(s.Name, 64), termLine(s.Version, 64), len(s.Tools), termLine(s.Dir, 300))
	}
	for _, e := range errs {
		fmt.Fprintf(stdout, "broken  %s\n", termLine(e.Error(), 600))
	}
	fmt.Fprintf(stdout, "%d skills loaded, %d broken\n", len(loaded), len(errs))
	if len(errs) > 0 {
		return fmt.Errorf("%w: %d", errBrokenSkills, len(errs))
	}
	return nil
}

// skillsList shows every tool of the directories and whether an agent with
// the given permissions would offer it, and if not, why.
func skillsList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("skills list", stderr)
	perms := fs.String("permissions", "", "comma-separated permissions granted to the agent")
	config := fs.String("config", "", "agent.toml: list exactly what that agent offers (its skill dirs, permissions and built-ins)")
	dirs, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	var (
		granted []string
		errs    []error
		ts      *skills.Toolset
	)
	switch {
	case *config != "":
		if len(dirs) > 0 || *perms != "" {
			return fmt.Errorf("%w: --config takes the directories and permissions from agent.toml", errUsage)
		}
		cfg, err := edge.LoadConfig(*config)
		if err != nil {
			return cmp.Or(nodeConfigGiven(*config, err), err)
		}
		granted = cfg.Skills.Permissions
		_, errs = skills.NewCatalog(cfg.Skills.Dirs...).Skills()
		box, err := edge.NewToolbox(cfg, nil)
		if err != nil {
			return err
		}
		ts = box.Tools
	case len(dirs) == 0:
		return fmt.Errorf("%w: evoclaw skills list [--permissions a,b] DIR... | --config agent.toml", errUsage)
	default:
		for _, p := range strings.Split(*perms, ",") {
			if p = strings.TrimSpace(p); p != "" {
				granted = append(granted, p)
			}
		}
		cat := skills.NewCatalog(dirs...)
		_, errs = cat.Skills()
		ts = skills.NewToolset(cat, skills.ExecOptions{Granted: granted})
	}
	tw := newTable(stdout, "TOOL\tSOURCE\tOFFERED\tPERMISSIONS\tWHY NOT")
	offered := 0
	for _, l := range ts.List() {
		why := ""
		switch {
		case l.ShadowedBy != "":
			why = "replaced by a " + l.ShadowedBy + " tool of the same name"
		case !l.Offered:
			why = "missing permissions: " + strings.Join(l.Missing, ", ")
		default:
			offered++
		}
		yes := "no"
		if l.Offered {
			yes = "yes"
		}
		src := l.Def.Evoclaw.Skill
		if l.Def.Evoclaw.Source != skills.SourceSkill {
			src = l.Def.Evoclaw.Source
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termLine(l.Def.Name, 64), termLine(src, 64), yes,
			termLine(strings.Join(l.Def.Evoclaw.Permissions, ","), 120), termLine(why, 200))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d tools offered with permissions [%s]\n", offered, strings.Join(granted, ","))
	for _, e := range errs {
		fmt.Fprintf(stderr, "broken skill: %s\n", termLine(e.Error(), 600))
	}
	return nil
}
