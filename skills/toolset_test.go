package skills

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

func fixtureToolset(granted ...string) *Toolset {
	return NewToolset(NewCatalog(filepath.Join("..", "testdata", "skills")), ExecOptions{Granted: granted})
}

func TestToolsetListAndOverride(t *testing.T) {
	ts := fixtureToolset("network")
	err := ts.Add(GoTool{Tool: Tool{Name: "sysinfo", Description: "built-in replacement"},
		Run: func(context.Context, map[string]any) Output { return Output{Content: []Block{TextBlock("from go")}} }})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]Listing{}
	for _, l := range ts.List() {
		byName[l.Def.Name] = append(byName[l.Def.Name], l)
	}
	// net_probe needs network AND shell; network alone is not enough.
	if l := byName["net_probe"]; len(l) != 1 || l[0].Offered || !reflect.DeepEqual(l[0].Missing, []string{"shell"}) {
		t.Fatalf("net_probe listing = %+v", l)
	}
	if l := byName["sysinfo"]; len(l) != 2 || !l[0].Offered || l[0].Def.Evoclaw.Source != SourceBuiltin ||
		l[1].Offered || l[1].ShadowedBy != SourceBuiltin {
		t.Fatalf("sysinfo listing = %+v", l)
	}
	names := ts.Names()
	if strings.Contains(strings.Join(names, ","), "net_probe") {
		t.Fatalf("offered %v includes net_probe", names)
	}
	for name := range byName {
		if got, want := ts.Offered(name), slices.Contains(names, name); got != want {
			t.Errorf("Offered(%q) = %v, Names holds it: %v", name, got, want)
		}
	}
	if ts.Offered("no_such_tool") {
		t.Error("Offered(no_such_tool) = true")
	}
	out := ts.Call(context.Background(), "sysinfo", nil)
	if out.ErrorType() != "" || out.Text() != "from go" {
		t.Fatalf("built-in did not override: %+v", out)
	}
}

func TestToolsetCallErrors(t *testing.T) {
	ts := fixtureToolset()
	err := ts.Add(
		GoTool{Tool: Tool{Name: "needs", Permissions: []string{"a", "b"}},
			Run: func(context.Context, map[string]any) Output { return Output{} }},
		GoTool{Tool: Tool{Name: "typed", Parameters: Parameters{Properties: map[string]Param{"n": {Type: TypeInteger}}, Required: []string{"n"}}},
			Run: func(_ context.Context, a map[string]any) Output {
				return Output{Content: []Block{TextBlock("bell\a\x1b[31mred\x00")}}
			}},
		GoTool{Tool: Tool{Name: "panics"}, Run: func(context.Context, map[string]any) Output { panic("boom") }},
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args map[string]any
		want wire.ErrorType
	}{
		{"nope", nil, wire.ErrNotFound},
		{"needs", nil, wire.ErrPermissionDenied},
		{"typed", map[string]any{"n": "x"}, wire.ErrInvalidParams},
		{"typed", nil, wire.ErrInvalidParams},
		{"panics", nil, wire.ErrInternal},
		{"net_probe", nil, wire.ErrPermissionDenied},
	} {
		if got := ts.Call(ctx, tc.name, tc.args).ErrorType(); got != tc.want {
			t.Errorf("%s(%v): error type %q, want %q", tc.name, tc.args, got, tc.want)
		}
	}
	out := ts.Call(ctx, "typed", map[string]any{"n": 1.0})
	if got := out.Text(); got != "bell[31mred" {
		t.Errorf("sanitized text = %q", got)
	}
	if got := ts.CallJSON(ctx, "typed", []byte(`[1]`)).ErrorType(); got != wire.ErrInvalidParams {
		t.Errorf("non-object JSON: %q", got)
	}
	if err := ts.Add(GoTool{Tool: Tool{Name: "bad name"}, Run: func(context.Context, map[string]any) Output { return Output{} }}); err == nil {
		t.Error("Add accepted an invalid name")
	}
}

func TestToolsetRunsSkillTool(t *testing.T) {
	ts := fixtureToolset()
	out := ts.CallJSON(context.Background(), "echo_args", []byte(`{"message":"hi there"}`))
	if out.ErrorType() != "" || !strings.Contains(out.Text(), "hi there") || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Fatalf("echo_args = %+v", out)
	}
	legacy := out.Wire("echo_args")
	if legacy.Status != wire.StatusSuccess || legacy.Result != out.Text() {
		t.Fatalf("legacy = %+v", legacy)
	}
	fail := ts.Call(context.Background(), "fail", nil).Wire("fail")
	if fail.Status != wire.StatusError || fail.ErrorType != wire.ErrExecutionFailed || fail.Error == "" {
		t.Fatalf("legacy failure = %+v", fail)
	}
}

func TestOutputWireImage(t *testing.T) {
	o := Output{Content: []Block{TextBlock("a"), ImageBlock("image/png", "AAAA")}}
	if got := o.Wire("read").Result; got != "a\n[image image/png, 3 bytes, sha256 709e80c88487a2411e1ee4dfb9f22a861492d20c4765150c0c794abd70f8147c]" {
		t.Fatalf("legacy result = %q", got)
	}
}

func TestToolsetCapsGoTools(t *testing.T) {
	ts := NewToolset(nil, ExecOptions{MaxTimeout: 50 * time.Millisecond})
	blocked := GoTool{Tool: Tool{Name: "blocks"}, Run: func(ctx context.Context, _ map[string]any) Output {
		<-ctx.Done()
		return Failed(wire.ErrTimeout, "stopped: "+context.Cause(ctx).Error())
	}}
	if err := ts.Add(blocked); err != nil {
		t.Fatal(err)
	}
	if out := ts.Call(context.Background(), "blocks", nil); out.ErrorType() != wire.ErrTimeout {
		t.Fatalf("uncapped Go tool: %+v", out)
	}
	ts = NewToolset(nil, ExecOptions{})
	ts.Add(blocked)
	start := time.Now()
	ts.CallTimeout(context.Background(), "blocks", nil, 30)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("caller's 30 ms timeout took %v", el)
	}
}

// TestPermissionAliases: the older names (fs_read, net, ...) grant and
// require the design's names they stand for, and a tool not offered for
// lack of a permission is denied in the design's words.
func TestPermissionAliases(t *testing.T) {
	for _, tc := range []struct {
		needs, granted []string
		ok             bool
		missing        string
	}{
		{[]string{"fs_read"}, []string{"file_read"}, true, ""},
		{[]string{"file_read"}, []string{"fs_read"}, true, ""},
		{[]string{"net", "shell"}, []string{"network"}, false, "shell"},
		{[]string{"hw_read"}, []string{"fs_read"}, false, "hw_read"},
		{[]string{"fs_write"}, nil, false, "file_write"},
	} {
		ok, missing := Allowed(Tool{Permissions: tc.needs}, tc.granted)
		if ok != tc.ok || strings.Join(missing, ",") != tc.missing {
			t.Errorf("Allowed(%v, %v) = %v %v, want %v %q", tc.needs, tc.granted, ok, missing, tc.ok, tc.missing)
		}
	}
	ts := NewToolset(nil, ExecOptions{Granted: []string{"fs_read"}})
	run := func(context.Context, map[string]any) Output { return Output{Content: []Block{TextBlock("ran")}} }
	if err := ts.Add(GoTool{Tool: Tool{Name: "bash", Permissions: []string{PermShell}}, Run: run},
		GoTool{Tool: Tool{Name: "read", Permissions: []string{PermFileRead}}, Run: run}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ts.Names(), ","); got != "read" {
		t.Fatalf("offered %s", got)
	}
	out := ts.Call(context.Background(), "bash", nil)
	if out.ErrorType() != wire.ErrPermissionDenied || !strings.HasPrefix(out.ErrorText(), "Permission denied for tool 'bash' (requires: shell).") {
		t.Fatalf("bash = %+v", out)
	}
	if d := ts.Denied("bash"); d == nil || d.ErrorText() != out.ErrorText() {
		t.Fatalf("Denied(bash) = %v", d)
	}
	if ts.Denied("read") != nil || ts.Denied("nope") != nil {
		t.Fatal("Denied answers for an offered or unknown tool")
	}
}

// TestToolsetReplace: Replace swaps the Go tools of one source and skill
// (an MCP server's, after its restart listed others) and leaves every
// other tool, and a refused batch changes nothing.
func TestToolsetReplace(t *testing.T) {
	run := func(context.Context, map[string]any) Output { return Output{} }
	tool := func(name, source, skill string) GoTool {
		return GoTool{Tool: Tool{Name: name, Skill: skill}, Source: source, Run: run}
	}
	for _, tc := range []struct {
		name          string
		source, skill string
		tools         []GoTool
		wantErr       bool
		want          string
	}{
		{"new tools in place of the old", SourceMCP, "a", []GoTool{tool("a__y", SourceMCP, "a")}, false, "a__y,b__x,read"},
		{"none left", SourceMCP, "a", nil, false, "b__x,read"},
		{"a refused batch", SourceMCP, "a", []GoTool{tool("a__bad name", SourceMCP, "a")}, true, "a__x,b__x,read"},
		{"nothing matches", SourceMCP, "c", []GoTool{tool("c__z", SourceMCP, "c")}, false, "a__x,b__x,c__z,read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := NewToolset(nil, ExecOptions{})
			if err := ts.Add(tool("a__x", SourceMCP, "a"), tool("b__x", SourceMCP, "b"), tool("read", SourceBuiltin, "a")); err != nil {
				t.Fatal(err)
			}
			gen := ts.Generation()
			err := ts.Replace(tc.source, tc.skill, tc.tools...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tc.wantErr)
			}
			if got := strings.Join(ts.Names(), ","); got != tc.want {
				t.Errorf("names %s, want %s", got, tc.want)
			}
			if !tc.wantErr && ts.Generation() == gen {
				t.Error("generation unchanged")
			}
		})
	}
}
