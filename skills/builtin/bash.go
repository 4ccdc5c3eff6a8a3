package builtin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/proc"
	"github.com/evoclaw/evoclaw/skills/sandbox"
)

// errorTail is how much of the end of stderr an error message carries.
const errorTail = 2 << 10

// NewBash returns the bash tool: a POSIX shell command in the workspace,
// with a timeout that kills its whole process group and bounded output.
func NewBash(o Options) (skills.GoTool, error) {
	o, err := o.withDefaults()
	if err != nil {
		return skills.GoTool{}, err
	}
	return skills.GoTool{
		Tool: skills.Tool{
			Name: "bash",
			Description: fmt.Sprintf("Run a shell command (/bin/sh) in the workspace directory. Timeout %v by default, at most %v; "+
				"each of stdout and stderr is cut at %d KiB.", o.BashTimeout, o.MaxBashTimeout, o.MaxOutput>>10),
			Parameters: params([]string{"command"},
				"command", skills.TypeString, "The command line",
				"timeout_ms", skills.TypeInteger, "Timeout in milliseconds (optional)"),
			Permissions: o.perms(skills.PermShell),
		},
		Run: o.bash,
	}, nil
}

func (o Options) bash(ctx context.Context, args map[string]any) skills.Output {
	cmd := str(args, "command")
	if strings.TrimSpace(cmd) == "" {
		return skills.Failed(wire.ErrInvalidParams, "bash: command is empty")
	}
	if rule := denied(cmd); rule != "" {
		return skills.Failed(wire.ErrPermissionDenied, fmt.Sprintf("bash: command refused by the shell guard (%s). Do not retry it in another form; tell the user what you wanted to do.", rule))
	}
	timeout := o.BashTimeout
	if ms := integer(args, "timeout_ms", 0); ms > 0 {
		if ms >= int64(o.MaxBashTimeout/time.Millisecond) {
			timeout = o.MaxBashTimeout
		} else {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	res, err := o.Exec.Exec(ctx, ExecRequest{Command: cmd, Env: o.Env, Timeout: timeout, MaxOutput: o.MaxOutput,
		OnOutput: skills.StreamOf(ctx)})
	if err != nil && res.Signal == "" {
		return execFailure(ctx, err)
	}
	out := skills.Output{ExitCode: &res.ExitCode, Stderr: string(res.Stderr)}
	if res.StdoutBytes > int64(len(res.Stdout)) || res.StderrBytes > int64(len(res.Stderr)) {
		out.Truncated, out.ResultBytes = true, res.StdoutBytes
	}
	stdout := string(trimPartialRune(res.Stdout))
	if res.StdoutBytes > int64(len(res.Stdout)) {
		stdout += fmt.Sprintf("\n[stdout cut: %d of %d bytes shown]", len(res.Stdout), res.StdoutBytes)
	}
	if stdout != "" {
		out.Content = append(out.Content, skills.TextBlock(stdout))
	}
	switch {
	case err != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		out.Content = append(out.Content, skills.ErrorBlock(wire.ErrTimeout, "bash: the request deadline passed; the command was killed"))
	case err != nil:
		out.Content = append(out.Content, skills.ErrorBlock(wire.ErrInterrupted, fmt.Sprintf("bash: interrupted: %v", context.Cause(ctx))))
	case res.TimedOut:
		out.Content = append(out.Content, skills.ErrorBlock(wire.ErrTimeout, fmt.Sprintf("bash: command timed out after %v and was killed with its process group", timeout)))
	case res.Signal != "":
		out.Content = append(out.Content, skills.ErrorBlock(wire.ErrExecutionFailed, fmt.Sprintf("bash: command killed by %s%s", res.Signal, tail(res.Stderr))))
	case res.ExitCode != 0:
		out.Content = append(out.Content, skills.ErrorBlock(wire.ErrExecutionFailed, fmt.Sprintf("bash: exit code %d%s", res.ExitCode, tail(res.Stderr))))
	case len(res.Stderr) > 0:
		out.Content = append(out.Content, skills.TextBlock("[stderr]\n"+string(trimPartialRune(res.Stderr))))
	}
	if len(out.Content) == 0 {
		out.Content = []skills.Block{skills.TextBlock("(no output)")}
	}
	return out
}

// execFailure maps an error of ExecOps that came before the command ran.
func execFailure(ctx context.Context, err error) skills.Output {
	switch {
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, sandbox.ErrUnknown):
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("bash: not run: %v", err))
	case errors.Is(err, ErrOutsideWorkspace):
		return skills.Failed(wire.ErrPermissionDenied, fmt.Sprintf("bash: %v", err))
	case errors.Is(err, proc.ErrNotFound):
		return skills.Failed(wire.ErrNotFound, fmt.Sprintf("bash: %v", err))
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return skills.Failed(wire.ErrTimeout, "bash: the request deadline passed before the command started")
	case ctx.Err() != nil:
		return skills.Failed(wire.ErrInterrupted, "bash: interrupted before the command started")
	}
	return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("bash: could not run the command: %v", err))
}

// tail returns ": " and the end of stderr, or "".
func tail(stderr []byte) string {
	s := strings.TrimSpace(string(trimPartialRune(stderr)))
	if s == "" {
		return ""
	}
	if len(s) > errorTail {
		s = "…" + strings.ToValidUTF8(s[len(s)-errorTail:], "")
	}
	return ": " + s
}
