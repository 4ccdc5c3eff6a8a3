// Package opstest holds the contract tests every backend of the built-in
// tools must pass: the same calls, the same results and error types,
// whether files and commands are local or on the far side of SSH.
package opstest

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/builtin"
)

// Backend returns options whose Dir is an empty workspace directory on
// this machine (the tests create fixtures in it directly) and whose Files
// and Exec reach it through the backend under test.
type Backend func(t *testing.T) builtin.Options

// png1x1 is a valid one-pixel PNG.
var png1x1, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// Run runs the contract against backend.
func Run(t *testing.T, backend Backend) {
	t.Run("WriteReadEdit", func(t *testing.T) { testWriteReadEdit(t, backend) })
	t.Run("ReadLimits", func(t *testing.T) { testReadLimits(t, backend) })
	t.Run("Image", func(t *testing.T) { testImage(t, backend) })
	t.Run("Jail", func(t *testing.T) { testJail(t, backend) })
	t.Run("LongNames", func(t *testing.T) { testLongNames(t, backend) })
	t.Run("GrepFind", func(t *testing.T) { testGrepFind(t, backend) })
	t.Run("Bash", func(t *testing.T) { testBash(t, backend) })
}

// toolset builds a toolset of all built-ins on the backend.
func toolset(t *testing.T, o builtin.Options) *skills.Toolset {
	t.Helper()
	tools, err := builtin.Tools(o, "read", "write", "edit", "bash", "grep", "find")
	if err != nil {
		t.Fatal(err)
	}
	return Toolset(t, tools...)
}

// Toolset returns a toolset of tools with every permission granted; it
// fails the test when a tool cannot be added.
func Toolset(t *testing.T, tools ...skills.GoTool) *skills.Toolset {
	t.Helper()
	ts := skills.NewToolset(nil, skills.ExecOptions{Granted: skills.Permissions()})
	if err := ts.Add(tools...); err != nil {
		t.Fatal(err)
	}
	return ts
}

// call runs a tool and checks its error type.
func call(t *testing.T, ts *skills.Toolset, name string, args map[string]any, want wire.ErrorType) skills.Output {
	t.Helper()
	out := ts.Call(context.Background(), name, args)
	if got := out.ErrorType(); got != want {
		t.Fatalf("%s(%v): error type %q, want %q; output %+v", name, args, got, want, out.Content)
	}
	return out
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func testWriteReadEdit(t *testing.T, backend Backend) {
	o := backend(t)
	ts := toolset(t, o)
	call(t, ts, "write", map[string]any{"path": "a/b/c.txt", "content": "one\ntwo\nthree\n"}, "")
	if b, err := os.ReadFile(filepath.Join(o.Dir, "a", "b", "c.txt")); err != nil || string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("file after write = %q, %v", b, err)
	}
	if got := call(t, ts, "read", map[string]any{"path": "a/b/c.txt"}, "").Text(); got != "one\ntwo\nthree\n" {
		t.Fatalf("read = %q", got)
	}
	abs := filepath.Join(o.Dir, "a", "b", "c.txt")
	if got := call(t, ts, "read", map[string]any{"path": abs, "offset": 2, "limit": 1}, "").Text(); !strings.HasPrefix(got, "two\n") || !strings.Contains(got, "offset=3") {
		t.Fatalf("read offset 2 limit 1 = %q", got)
	}
	call(t, ts, "edit", map[string]any{"path": "a/b/c.txt", "old_text": "two", "new_text": "2"}, "")
	call(t, ts, "edit", map[string]any{"path": "a/b/c.txt", "old_text": "absent", "new_text": "x"}, wire.ErrExecutionFailed)
	call(t, ts, "write", map[string]any{"path": "dup.txt", "content": "x x"}, "")
	call(t, ts, "edit", map[string]any{"path": "dup.txt", "old_text": "x", "new_text": "y"}, wire.ErrExecutionFailed)
	call(t, ts, "edit", map[string]any{"path": "dup.txt", "old_text": "x", "new_text": "y", "replace_all": true}, "")
	if b, _ := os.ReadFile(filepath.Join(o.Dir, "a", "b", "c.txt")); string(b) != "one\n2\nthree\n" {
		t.Fatalf("file after edit = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(o.Dir, "dup.txt")); string(b) != "y y" {
		t.Fatalf("file after replace_all = %q", b)
	}
	call(t, ts, "read", map[string]any{"path": "missing.txt"}, wire.ErrNotFound)
	call(t, ts, "edit", map[string]any{"path": "missing.txt", "old_text": "a", "new_text": "b"}, wire.ErrNotFound)
	call(t, ts, "read", map[string]any{"path": "a/b/c.txt", "offset": 99}, wire.ErrInvalidParams)
	call(t, ts, "read", map[string]any{}, wire.ErrInvalidParams)
	call(t, ts, "write", map[string]any{"path": "a", "content": "x"}, wire.ErrInvalidParams)
}

// testLongNames: a file whose name is as long as the file system allows
// (255 bytes) can be created, replaced, edited and read, although the
// temporary file it is written through needs a name of its own beside it.
func testLongNames(t *testing.T, backend Backend) {
	o := backend(t)
	ts := toolset(t, o)
	for _, name := range []string{strings.Repeat("a", 255), strings.Repeat("é", 127), "sub/" + strings.Repeat("c", 251) + ".txt"} {
		call(t, ts, "write", map[string]any{"path": name, "content": "one\n"}, "")
		call(t, ts, "write", map[string]any{"path": name, "content": "two\n"}, "")
		call(t, ts, "edit", map[string]any{"path": name, "old_text": "two", "new_text": "three"}, "")
		if got := call(t, ts, "read", map[string]any{"path": name}, "").Text(); got != "three\n" {
			t.Fatalf("read %.20q… = %q", name, got)
		}
		if b, err := os.ReadFile(filepath.Join(o.Dir, filepath.FromSlash(name))); err != nil || string(b) != "three\n" {
			t.Fatalf("%.20q… on disk = %q, %v", name, b, err)
		}
	}
	// One byte more is the file system's refusal, worded the same by every
	// backend (an SFTP server words it "Bad message", which told the model
	// nothing), for every tool that takes a path.
	long := strings.Repeat("a", 256)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"write", map[string]any{"path": long, "content": "x"}},
		{"write", map[string]any{"path": "sub/" + long + "/f.txt", "content": "x"}},
		{"read", map[string]any{"path": long}},
		{"edit", map[string]any{"path": long, "old_text": "a", "new_text": "b"}},
	} {
		out := call(t, ts, c.tool, c.args, wire.ErrExecutionFailed)
		if !strings.Contains(out.ErrorText(), "file name too long") {
			t.Errorf("%s of a 256-byte name: %q, want it to say the file name is too long", c.tool, out.ErrorText())
		}
	}
	entries, err := os.ReadDir(o.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".evoclaw-") {
			t.Fatalf("temporary file %q left behind", e.Name())
		}
	}
}

func testReadLimits(t *testing.T, backend Backend) {
	o := backend(t)
	o.MaxReadLines, o.MaxReadBytes = 10, 1000
	ts := toolset(t, o)
	var b strings.Builder
	for i := range 50 {
		b.WriteString(strings.Repeat("x", i%7) + "\n")
	}
	mustWrite(t, filepath.Join(o.Dir, "lines.txt"), b.String())
	out := call(t, ts, "read", map[string]any{"path": "lines.txt"}, "")
	if got := strings.Count(out.Text(), "\n"); got != 11 || !out.Truncated || !strings.Contains(out.Text(), "lines 1-10") {
		t.Fatalf("line-limited read: %d newlines, truncated %v:\n%s", got, out.Truncated, out.Text())
	}
	mustWrite(t, filepath.Join(o.Dir, "long.txt"), strings.Repeat("é", 5000)) // one 10000-byte line
	out = call(t, ts, "read", map[string]any{"path": "long.txt"}, "")
	body, _, _ := strings.Cut(out.Text(), "\n[cut")
	if len(body) > 1000 || !strings.Contains(out.Text(), "[cut at 1000 bytes") || !strings.HasSuffix(body, "é") {
		t.Fatalf("byte-limited read: %d bytes, %q", len(body), out.Text()[len(out.Text())-60:])
	}
	mustWrite(t, filepath.Join(o.Dir, "bin.dat"), "ab\x00cd")
	call(t, ts, "read", map[string]any{"path": "bin.dat"}, wire.ErrExecutionFailed)
}

func testImage(t *testing.T, backend Backend) {
	o := backend(t)
	ts := toolset(t, o)
	if err := os.WriteFile(filepath.Join(o.Dir, "dot.png"), png1x1, 0o644); err != nil {
		t.Fatal(err)
	}
	out := call(t, ts, "read", map[string]any{"path": "dot.png"}, "")
	if len(out.Content) != 2 || out.Content[1].Kind != skills.KindImage || out.Content[1].MIMEType != "image/png" {
		t.Fatalf("image read = %+v", out.Content)
	}
	if got, err := base64.StdEncoding.DecodeString(out.Content[1].Data); err != nil || string(got) != string(png1x1) {
		t.Fatalf("image data does not round-trip: %v", err)
	}
}

func testJail(t *testing.T, backend Backend) {
	o := backend(t)
	ts := toolset(t, o)
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "secret.txt"), "secret")
	if err := os.Symlink(outside, filepath.Join(o.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(o.Dir, "filelink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../"+filepath.Base(outside), filepath.Join(o.Dir, "rel")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(o.Dir, "in", "ok.txt"), "fine")
	if err := os.Symlink("in/ok.txt", filepath.Join(o.Dir, "inside")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"../secret.txt", "a/../../secret.txt", filepath.Join(outside, "secret.txt"), "/etc/passwd",
		"link/secret.txt", "filelink", "rel/secret.txt",
	} {
		for _, tool := range []string{"read", "write", "edit"} {
			args := map[string]any{"path": p}
			switch tool {
			case "write":
				args["content"] = "pwned"
			case "edit":
				args["old_text"], args["new_text"] = "secret", "pwned"
			}
			out := call(t, ts, tool, args, wire.ErrPermissionDenied)
			if strings.Contains(out.Text(), "secret") {
				t.Fatalf("%s %s leaked: %q", tool, p, out.Text())
			}
		}
	}
	call(t, ts, "grep", map[string]any{"pattern": "secret", "path": "link"}, wire.ErrPermissionDenied)
	call(t, ts, "find", map[string]any{"pattern": "*", "path": "../"}, wire.ErrPermissionDenied)
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret" {
		t.Fatalf("file outside the workspace was changed: %q", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("files were created outside the workspace: %v", entries)
	}
	// A symlink that stays inside is fine, and grep over the tree does not
	// follow the escaping link.
	if got := call(t, ts, "read", map[string]any{"path": "inside"}, "").Text(); got != "fine" {
		t.Fatalf("read through inside symlink = %q", got)
	}
	if got := call(t, ts, "grep", map[string]any{"pattern": "secret|fine"}, "").Text(); strings.Contains(got, "secret") || !strings.Contains(got, "in/ok.txt:1: fine") {
		t.Fatalf("grep over the workspace = %q", got)
	}
}

func testGrepFind(t *testing.T, backend Backend) {
	o := backend(t)
	o.MaxResults = 3
	ts := toolset(t, o)
	mustWrite(t, filepath.Join(o.Dir, "src", "main.go"), "package main\nfunc main() {}\n")
	mustWrite(t, filepath.Join(o.Dir, "src", "util.go"), "package main\n// TODO tidy\n")
	mustWrite(t, filepath.Join(o.Dir, "README.md"), "Todo list\n")
	mustWrite(t, filepath.Join(o.Dir, ".git", "HEAD"), "TODO in git\n")
	got := call(t, ts, "grep", map[string]any{"pattern": "todo", "ignore_case": true}, "").Text()
	if got != "README.md:1: Todo list\nsrc/util.go:2: // TODO tidy" {
		t.Fatalf("grep = %q", got)
	}
	if got := call(t, ts, "grep", map[string]any{"pattern": "package", "glob": "*.go", "path": "src"}, "").Text(); strings.Count(got, "\n") != 1 {
		t.Fatalf("grep glob = %q", got)
	}
	if got := call(t, ts, "grep", map[string]any{"pattern": "nothing-here"}, "").Text(); got != "no matches" {
		t.Fatalf("grep no match = %q", got)
	}
	call(t, ts, "grep", map[string]any{"pattern": "("}, wire.ErrInvalidParams)
	if got := call(t, ts, "find", map[string]any{"pattern": "*.go"}, "").Text(); got != "src/main.go\nsrc/util.go" {
		t.Fatalf("find = %q", got)
	}
	if got := call(t, ts, "find", map[string]any{"pattern": "s*", "type": "dir"}, "").Text(); got != "src/" {
		t.Fatalf("find dir = %q", got)
	}
	for i := range 5 {
		mustWrite(t, filepath.Join(o.Dir, "many", string(rune('a'+i))+".txt"), "hit\n")
	}
	out := call(t, ts, "find", map[string]any{"pattern": "*.txt", "path": "many"}, "")
	if !out.Truncated || strings.Count(out.Text(), ".txt") != 3 {
		t.Fatalf("find over the limit = %q", out.Text())
	}
	call(t, ts, "find", map[string]any{"pattern": "*", "path": "nope"}, wire.ErrNotFound)
}

func testBash(t *testing.T, backend Backend) {
	o := backend(t)
	o.MaxOutput = 1000
	ts := toolset(t, o)
	out := call(t, ts, "bash", map[string]any{"command": "pwd; echo hello > made.txt; echo warn >&2"}, "")
	if !strings.Contains(out.Text(), o.Dir) || !strings.Contains(out.Text(), "[stderr]\nwarn") || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Fatalf("bash = %+v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(o.Dir, "made.txt")); string(b) != "hello\n" {
		t.Fatalf("bash did not run in the workspace: %q", b)
	}
	out = call(t, ts, "bash", map[string]any{"command": "echo partial; echo boom >&2; exit 3"}, wire.ErrExecutionFailed)
	if *out.ExitCode != 3 || !strings.Contains(out.Text(), "partial") || !strings.Contains(out.Wire("bash").Error, "exit code 3: boom") {
		t.Fatalf("failing bash = %+v", out)
	}
	out = call(t, ts, "bash", map[string]any{"command": "head -c 100000 /dev/zero | tr '\\0' x"}, "")
	if !out.Truncated || out.ResultBytes != 100000 || !strings.Contains(out.Text(), "[stdout cut: 1000 of 100000 bytes shown]") {
		t.Fatalf("big output: truncated %v bytes %d", out.Truncated, out.ResultBytes)
	}
	call(t, ts, "bash", map[string]any{"command": "sleep 30", "timeout_ms": 200}, wire.ErrTimeout)
	call(t, ts, "bash", map[string]any{"command": "sudo id"}, wire.ErrPermissionDenied)
}
