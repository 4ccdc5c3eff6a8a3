package mcptools_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/mcptools"
	"github.com/evoclaw/evoclaw/skills/mcptools/mcptest"
)

// connectOfficial connects to one official server as name and returns its
// tools in a toolset.
func connectOfficial(t *testing.T, name string, cfg mcptools.ServerConfig) *skills.Toolset {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	set, errs := mcptools.Connect(ctx, map[string]mcptools.ServerConfig{name: cfg}, nil)
	if len(errs) > 0 {
		t.Fatalf("connect %s: %v", name, errs)
	}
	t.Cleanup(func() {
		if err := set.Close(); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
	})
	tools, errs := set.Tools()
	if len(errs) > 0 {
		t.Fatalf("tools of %s: %v", name, errs)
	}
	ts := skills.NewToolset(nil, skills.ExecOptions{})
	if err := ts.Add(tools...); err != nil {
		t.Fatal(err)
	}
	return ts
}

// The official "everything" reference server over stdio: its tools are
// listed, called, a long-running one is cut at the server's timeout_ms,
// image content arrives as an image, and errors carry a stable type.
func TestOfficialEverythingServer(t *testing.T) {
	ts := connectOfficial(t, "every", mcptest.Config(t, mcptest.Everything, 2000, "stdio"))
	names := "," + strings.Join(ts.Names(), ",") + ","
	for _, want := range []string{"every__echo", "every__get-sum", "every__get-tiny-image", "every__trigger-long-running-operation"} {
		if !strings.Contains(names, ","+want+",") {
			t.Fatalf("tools %s lack %s", names, want)
		}
	}
	for _, d := range ts.Defs() {
		if d.Evoclaw.TimeoutMS != 2000 || d.Evoclaw.Source != skills.SourceMCP {
			t.Errorf("%s: timeout %d, source %q", d.Name, d.Evoclaw.TimeoutMS, d.Evoclaw.Source)
		}
	}
	ctx := context.Background()
	if out := ts.Call(ctx, "every__echo", map[string]any{"message": "hi"}); out.ErrorType() != "" || out.Text() != "Echo: hi" {
		t.Errorf("echo = %+v", out)
	}
	if out := ts.Call(ctx, "every__get-sum", map[string]any{"a": 2, "b": 3.5}); !strings.Contains(out.Text(), "is 5.5") {
		t.Errorf("get-sum = %+v", out)
	}
	if out := ts.Call(ctx, "every__get-sum", map[string]any{"a": "two"}); out.Succeeded() ||
		(out.ErrorType() != wire.ErrInvalidParams && out.ErrorType() != wire.ErrExecutionFailed) {
		t.Errorf("get-sum with bad arguments = %+v", out)
	}
	out := ts.Call(ctx, "every__get-tiny-image", nil)
	var img *skills.Block
	for i, b := range out.Content {
		if b.Kind == skills.KindImage {
			img = &out.Content[i]
		}
	}
	if img == nil || img.MIMEType != "image/png" {
		t.Fatalf("get-tiny-image = %+v", out)
	}
	if b, err := base64.StdEncoding.DecodeString(img.Data); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("image data is not a PNG: %v", err)
	}
	start := time.Now()
	out = ts.Call(ctx, "every__trigger-long-running-operation", map[string]any{"duration": 30, "steps": 3})
	if out.ErrorType() != wire.ErrTimeout || !strings.Contains(out.Wire("x").Error, "2000ms") && !strings.Contains(out.Wire("x").Error, "2s") {
		t.Errorf("long-running operation under a 2 s timeout = %+v", out)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("a 2 s timeout took %v", el)
	}
	if out := ts.Call(ctx, "every__trigger-long-running-operation", map[string]any{"duration": 0.2, "steps": 2}); !strings.Contains(out.Text(), "completed") {
		t.Errorf("short long-running operation = %+v", out)
	}
	if out := ts.Call(ctx, "every__echo", map[string]any{"message": "again"}); out.Text() != "Echo: again" {
		t.Errorf("echo after a timeout = %+v", out)
	}
}

// The official filesystem server over stdio, confined to one directory:
// it writes and reads there and refuses paths outside.
func TestOfficialFilesystemServer(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := connectOfficial(t, "fs", mcptest.Config(t, mcptest.Filesystem, 10000, dir))
	ctx := context.Background()
	file := filepath.Join(dir, "note.txt")
	if out := ts.Call(ctx, "fs__write_file", map[string]any{"path": file, "content": "hello from evoclaw"}); !out.Succeeded() {
		t.Fatalf("write_file = %+v", out)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "hello from evoclaw" {
		t.Fatalf("file %q, %v", b, err)
	}
	if out := ts.Call(ctx, "fs__read_text_file", map[string]any{"path": file}); out.Text() != "hello from evoclaw" {
		t.Errorf("read_text_file = %+v", out)
	}
	if out := ts.Call(ctx, "fs__list_directory", map[string]any{"path": dir}); !strings.Contains(out.Text(), "note.txt") {
		t.Errorf("list_directory = %+v", out)
	}
	out := ts.Call(ctx, "fs__read_text_file", map[string]any{"path": "/etc/passwd"})
	if out.Succeeded() || out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(strings.ToLower(out.ErrorText()), "denied") {
		t.Errorf("read outside the allowed directory = %+v", out)
	}
}
