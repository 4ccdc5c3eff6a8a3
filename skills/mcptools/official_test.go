package mcptools_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// The official "everything" server says its tools changed
// (notifications/tools/list_changed) as it registers the tools that
// depend on the client's capabilities, just after initialisation: they
// are listed again on the same session, and what is offered is the
// server's listing, the same as the first here, so no change is reported.
func TestOfficialEverythingListChanged(t *testing.T) {
	cfg := mcptest.Config(t, mcptest.Everything, 2000, "stdio")
	var changes []string // of Options.Changed: the last is what is offered
	var mu sync.Mutex    // guards changes
	set, errs := mcptools.ConnectWith(context.Background(), map[string]mcptools.ServerConfig{"every": cfg},
		mcptools.Options{Changed: func(_ string, tools []skills.GoTool, _ []error) {
			mu.Lock()
			defer mu.Unlock()
			changes = changes[:0]
			for _, g := range tools {
				changes = append(changes, g.Tool.Name)
			}
		}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { set.Close() })
	first, _ := set.Tools()
	deadline := time.Now().Add(20 * time.Second)
	for {
		notices, relistings := mcptools.RelistCounts(set, "every")
		if relistings > 0 {
			t.Logf("%d notifications, %d listings after the first", notices, relistings)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d notifications, no listing after the first within 20 s", notices)
		}
		time.Sleep(20 * time.Millisecond) // polling the listing the notification causes
	}
	now, _ := set.Tools()
	mu.Lock()
	changed := slices.Clone(changes)
	mu.Unlock()
	if changed != nil && !slices.Equal(changed, names(now)) {
		t.Errorf("last change %v, offered %v", changed, names(now))
	}
	if changed == nil && !slices.Equal(names(first), names(now)) {
		t.Errorf("offered %v, then %v without a change reported", names(first), names(now))
	}
	ts := skills.NewToolset(nil, skills.ExecOptions{})
	if err := ts.Add(now...); err != nil {
		t.Fatal(err)
	}
	if out := ts.Call(context.Background(), "every__echo", map[string]any{"message": "after"}); out.Text() != "Echo: after" {
		t.Errorf("echo after the listing = %+v", out)
	}
}

// names lists the names of tools.
func names(tools []skills.GoTool) []string {
	var out []string
	for _, g := range tools {
		out = append(out, g.Tool.Name)
	}
	return out
}
