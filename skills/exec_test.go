//go:build linux

package skills

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// demoTool returns a tool of the demo fixture skill.
func demoTool(t *testing.T, name string) Tool {
	t.Helper()
	s, err := Load(filepath.Join("..", "testdata", "skills", "demo", FileName))
	if err != nil {
		t.Fatalf("load demo skill: %v", err)
	}
	for _, tool := range s.Tools {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("demo skill has no tool %q", name)
	return Tool{}
}

// scriptTool writes a one-tool skill whose binary is script and loads it.
func scriptTool(t *testing.T, script string, mode os.FileMode) Tool {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "tool"), []byte("#!/bin/sh\n"+script+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	toml := "[skill]\nname = \"tmp\"\n[[tools]]\nname = \"tool\"\nbinary = \"bin/tool\"\n" +
		"[tools.parameters.properties.text]\ntype = \"string\"\n"
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return s.Tools[0]
}

// check compares the parts of a result a test cares about.
func check(t *testing.T, got flat, status string, typ wire.ErrorType, errHas string, exit *int) {
	t.Helper()
	if got.Status != status || got.ErrorType != typ || !strings.Contains(got.Error, errHas) {
		t.Errorf("result status %q type %q error %q\nwant status %q type %q error containing %q",
			got.Status, got.ErrorType, got.Error, status, typ, errHas)
	}
	if got.ErrorType != "" && !got.ErrorType.Known() {
		t.Errorf("ErrorType %q is not a wire error type", got.ErrorType)
	}
	switch {
	case exit == nil && got.ExitCode != nil:
		t.Errorf("ExitCode = %d, want none (the binary must not have run)", *got.ExitCode)
	case exit != nil && (got.ExitCode == nil || *got.ExitCode != *exit):
		t.Errorf("ExitCode = %v, want %d", got.ExitCode, *exit)
	}
}

func ptr(i int) *int { return &i }

func TestExecuteSysinfo(t *testing.T) {
	out := flatExecute(t.Context(), demoTool(t, "sysinfo"), nil, ExecOptions{Granted: []string{"sys_read"}})
	check(t, out, wire.StatusSuccess, "", "", ptr(0))
	var keys []string
	for line := range strings.Lines(out.Result) {
		key, value, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok || value == "" || value == "unknown" {
			t.Errorf("line %q is not a filled-in key: value", line)
		}
		keys = append(keys, key)
	}
	if want := []string{"hostname", "uptime_seconds", "load", "mem_available_kb"}; !slices.Equal(keys, want) {
		t.Errorf("keys = %v, want %v\n%s", keys, want, out.Result)
	}
	if out.ResultBytes != 0 || out.Truncated || out.Elapsed <= 0 {
		t.Errorf("ResultBytes %d Truncated %v Elapsed %v", out.ResultBytes, out.Truncated, out.Elapsed)
	}
}

func TestExecuteEchoArgs(t *testing.T) {
	tool := demoTool(t, "echo_args")
	out := flatExecute(t.Context(), tool, map[string]any{"message": "hi there", "tags": []any{"a", "b"}, "ratio": 0.5}, ExecOptions{})
	check(t, out, wire.StatusSuccess, "", "", ptr(0))
	// Defaults (count, loud) are filled in; stdin is one JSON line.
	if want := `{"count":1,"loud":false,"message":"hi there","ratio":0.5,"tags":["a","b"]}` + "\n"; out.Result != want {
		t.Errorf("stdin seen by the tool = %q, want %q", out.Result, want)
	}
	if want := "--count\n1\n--loud\nfalse\n--message\nhi there\n--ratio\n0.5\n--tags\n[\"a\",\"b\"]\n"; out.Stderr != want {
		t.Errorf("argv seen by the tool = %q, want %q", out.Stderr, want)
	}
}

func TestExecuteErrors(t *testing.T) {
	notFound := demoTool(t, "fail")
	notFound.Binary = "bin/does_not_exist"
	noDir := demoTool(t, "fail")
	noDir.Dir = filepath.Join(t.TempDir(), "gone")
	shortSleep := demoTool(t, "sleepy")
	shortSleep.TimeoutMS = 100
	defaultSleep := demoTool(t, "sleepy")
	defaultSleep.TimeoutMS = 0
	misconfigured := demoTool(t, "fail")
	misconfigured.Dir = ""

	tests := []struct {
		name   string
		tool   Tool
		args   map[string]any
		opts   ExecOptions
		status string
		typ    wire.ErrorType
		errHas string
		exit   *int
	}{
		{name: "permission not granted", tool: demoTool(t, "sysinfo"),
			typ: wire.ErrPermissionDenied, errHas: "Permission denied for tool 'sysinfo' (requires: sys_read)."},
		{name: "wrong permission granted", tool: demoTool(t, "sysinfo"), opts: ExecOptions{Granted: []string{"shell"}},
			typ: wire.ErrPermissionDenied, errHas: "(requires: sys_read)"},
		{name: "missing parameter", tool: demoTool(t, "echo_args"), args: map[string]any{"count": 2.0},
			typ: wire.ErrInvalidParams, errHas: `invalid parameters for "echo_args": missing "message". Required: [message]. Optional: [count, loud, ratio, tags]`},
		{name: "wrong type", tool: demoTool(t, "sleepy"), args: map[string]any{"seconds": "ten"},
			typ: wire.ErrInvalidParams, errHas: `"seconds" must be a number, got string`},
		{name: "NUL in an argument", tool: demoTool(t, "echo_args"), args: map[string]any{"message": "a\x00b"},
			typ: wire.ErrInvalidParams, errHas: "NUL byte"},
		{name: "missing binary", tool: notFound,
			typ: wire.ErrNotFound, errHas: `binary "bin/does_not_exist" not found in skill "demo"`},
		{name: "missing skill directory", tool: noDir,
			typ: wire.ErrNotFound, errHas: "skill directory is missing"},
		{name: "tool timeout", tool: shortSleep, args: map[string]any{"seconds": 30.0},
			typ: wire.ErrTimeout, errHas: `tool "sleepy" timed out after 100ms`, exit: ptr(-1)},
		{name: "default timeout", tool: defaultSleep, args: map[string]any{"seconds": 30.0}, opts: ExecOptions{DefaultTimeout: 150 * time.Millisecond},
			typ: wire.ErrTimeout, errHas: `tool "sleepy" timed out after 150ms`, exit: ptr(-1)},
		{name: "timeout clamped", tool: defaultSleep, args: map[string]any{"seconds": 30.0}, opts: ExecOptions{DefaultTimeout: time.Hour, MaxTimeout: 120 * time.Millisecond},
			typ: wire.ErrTimeout, errHas: `tool "sleepy" timed out after 120ms`, exit: ptr(-1)},
		{name: "non-zero exit", tool: demoTool(t, "fail"),
			typ: wire.ErrExecutionFailed, errHas: "tool \"fail\" failed with exit code 3: reading sensor\nerror: sensor not responding", exit: ptr(3)},
		{name: "misconfigured tool", tool: misconfigured,
			typ: wire.ErrInternal, errHas: "misconfigured"},
		{name: "quick sleep succeeds", tool: demoTool(t, "sleepy"), args: map[string]any{"seconds": 0},
			status: wire.StatusSuccess, exit: ptr(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.status == "" {
				tt.status = wire.StatusError
			}
			out := flatExecute(t.Context(), tt.tool, tt.args, tt.opts)
			check(t, out, tt.status, tt.typ, tt.errHas, tt.exit)
			if out.Elapsed > 20*time.Second {
				t.Errorf("Execute took %v", out.Elapsed)
			}
		})
	}
}

func TestExecuteFailureKeepsOutput(t *testing.T) {
	out := flatExecute(t.Context(), demoTool(t, "fail"), nil, ExecOptions{})
	if out.Result != "starting\n" || out.Stderr != "reading sensor\nerror: sensor not responding\n" {
		t.Errorf("Result %q Stderr %q", out.Result, out.Stderr)
	}
}

func TestExecuteContext(t *testing.T) {
	sleepy := demoTool(t, "sleepy")
	sleepy.TimeoutMS = 60_000
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	out := flatExecute(ctx, sleepy, map[string]any{"seconds": 30}, ExecOptions{})
	check(t, out, wire.StatusError, wire.ErrTimeout, "(request deadline)", ptr(-1))

	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	out = flatExecute(ctx, sleepy, map[string]any{"seconds": 30}, ExecOptions{})
	check(t, out, wire.StatusError, wire.ErrInterrupted, "interrupted", nil)
}

func TestExecuteBinaryChecks(t *testing.T) {
	t.Run("not executable", func(t *testing.T) {
		out := flatExecute(t.Context(), scriptTool(t, "echo hi", 0o644), nil, ExecOptions{})
		check(t, out, wire.StatusError, wire.ErrPermissionDenied, `binary "bin/tool" is not executable`, nil)
	})
	t.Run("missing interpreter", func(t *testing.T) {
		tool := scriptTool(t, "", 0o755)
		if err := os.WriteFile(filepath.Join(tool.Dir, tool.Binary), []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		out := flatExecute(t.Context(), tool, nil, ExecOptions{})
		check(t, out, wire.StatusError, wire.ErrNotFound, "interpreter", nil)
	})
	t.Run("symlink out of the skill directory", func(t *testing.T) {
		tool := scriptTool(t, "echo hi", 0o755)
		bin := filepath.Join(tool.Dir, tool.Binary)
		if err := os.Remove(bin); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/bin/sh", bin); err != nil {
			t.Fatal(err)
		}
		out := flatExecute(t.Context(), tool, nil, ExecOptions{})
		check(t, out, wire.StatusError, wire.ErrPermissionDenied, "resolves outside its skill directory", nil)
	})
	t.Run("symlink inside the skill directory", func(t *testing.T) {
		tool := scriptTool(t, "echo linked", 0o755)
		if err := os.Symlink("tool", filepath.Join(tool.Dir, "bin", "alias")); err != nil {
			t.Fatal(err)
		}
		tool.Binary = "bin/alias"
		out := flatExecute(t.Context(), tool, nil, ExecOptions{})
		check(t, out, wire.StatusSuccess, "", "", ptr(0))
		if out.Result != "linked\n" {
			t.Errorf("Result = %q", out.Result)
		}
	})
	t.Run("escaping binary path", func(t *testing.T) {
		tool := scriptTool(t, "echo hi", 0o755)
		tool.Binary = "../../bin/sh"
		out := flatExecute(t.Context(), tool, nil, ExecOptions{})
		check(t, out, wire.StatusError, wire.ErrInternal, "misconfigured", nil)
	})
}

func TestExecuteProcess(t *testing.T) {
	tests := []struct {
		name   string
		script string
		opts   ExecOptions
		status string
		typ    wire.ErrorType
		errHas string
		exit   int
		result string
	}{
		{name: "runs in the skill directory", script: `[ -f skill.toml ] && echo "in skill dir"`, status: wire.StatusSuccess, result: "in skill dir\n"},
		{name: "minimal environment", script: `echo "$EVOCLAW_TOOL $LANG ${EVOCLAW_TEST_SECRET:-clean}"`, status: wire.StatusSuccess, result: "tool C.UTF-8 clean\n"},
		{name: "given environment", script: `echo "$EVOCLAW_TOOL $A ${HOME:-nohome}"`, opts: ExecOptions{Env: []string{"A=1", "EVOCLAW_TOOL=spoofed"}},
			status: wire.StatusSuccess, result: "tool 1 nohome\n"},
		{name: "invalid UTF-8 is replaced", script: `printf 'ok\377\n'`, status: wire.StatusSuccess, result: "ok\uFFFD\n"},
		{name: "output cap keeps whole runes", script: `printf 'abcdé'`, opts: ExecOptions{MaxOutput: 5}, status: wire.StatusSuccess, result: "abcd"},
		{name: "crash", script: `echo dying >&2; kill -SEGV $$`, typ: wire.ErrExecutionFailed, errHas: `tool "tool" was killed by signal SIGSEGV: dying`, exit: -1},
		{name: "failure without stderr shows stdout", script: `echo "usage: tool --text X"; exit 2`, typ: wire.ErrExecutionFailed, errHas: "exit code 2: usage: tool --text X", exit: 2, result: "usage: tool --text X\n"},
		{name: "failure without output", script: `exit 1`, typ: wire.ErrExecutionFailed, errHas: "exit code 1 (no output)", exit: 1},
		{name: "long stderr is cut to its end", script: `i=0; while [ $i -lt 400 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 1`,
			typ: wire.ErrExecutionFailed, errHas: "line 399", exit: 1},
	}
	t.Setenv("EVOCLAW_TEST_SECRET", "leaked")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.status == "" {
				tt.status = wire.StatusError
			}
			out := flatExecute(t.Context(), scriptTool(t, tt.script, 0o755), nil, tt.opts)
			check(t, out, tt.status, tt.typ, tt.errHas, &tt.exit)
			if out.Result != tt.result {
				t.Errorf("Result = %q, want %q", out.Result, tt.result)
			}
			if len(out.Error) > errorTailBytes+200 {
				t.Errorf("Error is %d bytes long", len(out.Error))
			}
		})
	}
}

func TestExecuteTruncation(t *testing.T) {
	tool := scriptTool(t, "head -c 100000 /dev/zero", 0o755)
	out := flatExecute(t.Context(), tool, nil, ExecOptions{MaxOutput: 1000})
	check(t, out, wire.StatusSuccess, "", "", ptr(0))
	if len(out.Result) != 1000 || out.ResultBytes != 100000 || !out.Truncated {
		t.Errorf("len(Result) %d ResultBytes %d Truncated %v", len(out.Result), out.ResultBytes, out.Truncated)
	}
}

func TestExecTimeoutChoice(t *testing.T) {
	tests := []struct {
		name string
		ms   int64
		o    ExecOptions
		want time.Duration
	}{
		{"defaults", 0, ExecOptions{}, DefaultTimeout},
		{"tool's own", 5000, ExecOptions{}, 5 * time.Second},
		{"caller's default", 0, ExecOptions{DefaultTimeout: time.Minute}, time.Minute},
		{"tool's own beats caller's default", 2000, ExecOptions{DefaultTimeout: time.Minute}, 2 * time.Second},
		{"clamped to max", 3_600_000, ExecOptions{}, DefaultMaxTimeout},
		{"clamped to caller's max", 5000, ExecOptions{MaxTimeout: time.Second}, time.Second},
		{"default clamped too", 0, ExecOptions{DefaultTimeout: time.Hour, MaxTimeout: time.Minute}, time.Minute},
		{"huge value does not overflow", 1 << 62, ExecOptions{}, DefaultMaxTimeout},
	}
	for _, tt := range tests {
		if got := tt.o.timeout(Tool{TimeoutMS: tt.ms}); got != tt.want {
			t.Errorf("%s: timeout = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestExecuteUnavailable(t *testing.T) {
	tool := scriptTool(t, "echo 'no thermal sensor' >&2; exit 69", 0o755)
	out := flatExecute(t.Context(), tool, nil, ExecOptions{})
	check(t, out, wire.StatusError, wire.ErrNotFound, "not available on this machine: no thermal sensor", ptr(ExitUnavailable))
}

// flat is an Output as the wire flattens it, with its elapsed time, for
// tests that compare fields.
type flat struct {
	wire.ToolResult
	Elapsed time.Duration
}

// flatExecute runs Execute and flattens its Output.
func flatExecute(ctx context.Context, tool Tool, args map[string]any, o ExecOptions) flat {
	out := Execute(ctx, tool, args, o)
	return flat{ToolResult: out.Wire(tool.Name), Elapsed: out.Elapsed}
}
