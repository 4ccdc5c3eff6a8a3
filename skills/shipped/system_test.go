//go:build linux

package shipped_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/shipped"
)

// systemSkill installs the shipped system skill and loads it.
func systemSkill(t *testing.T) map[string]skills.Tool {
	t.Helper()
	dir, err := shipped.Install("system", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := skills.Load(filepath.Join(dir, skills.FileName))
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]skills.Tool{}
	for _, tool := range s.Tools {
		tools[tool.Name] = tool
	}
	return tools
}

// hermeticPath returns a PATH directory holding only the utilities the
// scripts need plus the given fake programs, so that a vcgencmd or gpioget
// installed on the test machine cannot change the outcome.
func hermeticPath(t *testing.T, fakes map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range []string{"sh", "awk", "cat", "sed", "head", "grep", "getconf", "df"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s not found: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	for name, script := range fakes {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tree writes files (path → content) under a new directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func run(t *testing.T, tool skills.Tool, args map[string]any, env ...string) wire.ToolResult {
	t.Helper()
	return skills.Execute(context.Background(), tool, args, skills.ExecOptions{Granted: []string{"fs_read", "hw_read"}, Env: env}).Wire(tool.Name)
}

// object decodes a successful result as a JSON object.
func object(t *testing.T, out wire.ToolResult) map[string]any {
	t.Helper()
	if out.Status != wire.StatusSuccess {
		t.Fatalf("tool failed: %s: %s", out.ErrorType, out.Error)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out.Result), &m); err != nil {
		t.Fatalf("result %q is not a JSON object: %v", out.Result, err)
	}
	return m
}

func wantNotFound(t *testing.T, out wire.ToolResult, msg string) {
	t.Helper()
	if out.ErrorType != wire.ErrNotFound || !strings.Contains(out.Error, msg) {
		t.Fatalf("outcome %s %q, want not_found mentioning %q", out.ErrorType, out.Error, msg)
	}
}

func TestSystemCPUTemp(t *testing.T) {
	tool := systemSkill(t)["cpu_temp"]
	sys := tree(t, map[string]string{
		"class/thermal/thermal_zone0/type": "acpitz\n", "class/thermal/thermal_zone0/temp": "40000\n",
		"class/thermal/thermal_zone1/type": "x86_pkg_temp\n", "class/thermal/thermal_zone1/temp": "48312\n",
	})
	path := "PATH=" + hermeticPath(t, nil)
	m := object(t, run(t, tool, nil, path, "EVOCLAW_SYSFS="+sys))
	if m["celsius"] != 48.3 || m["source"] != "thermal_zone1" || m["type"] != "x86_pkg_temp" {
		t.Errorf("auto zone = %v", m)
	}
	if m := object(t, run(t, tool, map[string]any{"zone": 0}, path, "EVOCLAW_SYSFS="+sys)); m["celsius"] != 40.0 {
		t.Errorf("zone 0 = %v", m)
	}
	wantNotFound(t, run(t, tool, map[string]any{"zone": 7}, path, "EVOCLAW_SYSFS="+sys), "no readable thermal zone 7")

	// A Raspberry Pi without thermal zones in sysfs but with vcgencmd.
	empty := t.TempDir()
	pi := "PATH=" + hermeticPath(t, map[string]string{"vcgencmd": `[ "$1" = measure_temp ] && echo "temp=51.5'C"`})
	if m := object(t, run(t, tool, nil, pi, "EVOCLAW_SYSFS="+empty)); m["celsius"] != 51.5 || m["source"] != "vcgencmd" {
		t.Errorf("vcgencmd = %v", m)
	}
	wantNotFound(t, run(t, tool, nil, path, "EVOCLAW_SYSFS="+empty), "no temperature sensor")
}

func TestSystemGPIO(t *testing.T) {
	tool := systemSkill(t)["gpio_read"]
	path := "PATH=" + hermeticPath(t, nil)
	noDev := "EVOCLAW_DEVFS=" + t.TempDir()

	sys := tree(t, map[string]string{
		"class/gpio/gpiochip0/base": "0\n", "class/gpio/gpiochip0/label": "other\n",
		"class/gpio/gpiochip512/base": "512\n", "class/gpio/gpiochip512/label": "pinctrl-bcm2711\n",
		"class/gpio/gpio529/value": "1\n", "class/gpio/export": "",
	})
	m := object(t, run(t, tool, map[string]any{"pin": 17}, path, noDev, "EVOCLAW_SYSFS="+sys))
	if m["value"] != 1.0 || m["line"] != 529.0 || m["method"] != "sysfs" {
		t.Errorf("sysfs read = %v", m)
	}

	dev := tree(t, map[string]string{"gpiochip0": "", "gpiochip4": ""})
	fakes := hermeticPath(t, map[string]string{
		"gpiodetect": `echo "gpiochip0 [gpio-brcmstb@107d508500] (32 lines)"; echo "gpiochip4 [pinctrl-rp1] (54 lines)"`,
		"gpioget":    `[ "$1" = gpiochip4 ] && [ "$2" = 17 ] && echo 0 && exit 0; echo "bad args $*" >&2; exit 1`,
	})
	m = object(t, run(t, tool, map[string]any{"pin": 17}, "PATH="+fakes, "EVOCLAW_DEVFS="+dev, "EVOCLAW_SYSFS="+t.TempDir()))
	if m["value"] != 0.0 || m["chip"] != "gpiochip4" || m["method"] != "chardev" {
		t.Errorf("chardev read = %v", m)
	}

	// libgpiod 2 syntax, reading the line as it is.
	v2 := hermeticPath(t, map[string]string{
		"gpioget": `[ "$*" = "--numeric --as-is -c gpiochip0 4" ] && echo 1 && exit 0; echo "unknown option" >&2; exit 1`,
	})
	m = object(t, run(t, tool, map[string]any{"pin": 4}, "PATH="+v2, "EVOCLAW_DEVFS="+dev, "EVOCLAW_SYSFS="+t.TempDir()))
	if m["value"] != 1.0 || m["chip"] != "gpiochip0" {
		t.Errorf("libgpiod 2 read = %v", m)
	}

	wantNotFound(t, run(t, tool, map[string]any{"pin": 17}, path, noDev, "EVOCLAW_SYSFS="+t.TempDir()), "no GPIO on this machine")
	wantNotFound(t, run(t, tool, map[string]any{"pin": 17}, path, "EVOCLAW_DEVFS="+dev, "EVOCLAW_SYSFS="+t.TempDir()), "gpioget is not installed")
	if out := run(t, tool, nil, path); out.ErrorType != wire.ErrInvalidParams {
		t.Errorf("missing pin: %s", out.ErrorType)
	}
	if out := skills.Execute(context.Background(), tool, map[string]any{"pin": 1}, skills.ExecOptions{}); out.ErrorType() != wire.ErrPermissionDenied {
		t.Errorf("without hw_read: %s", out.ErrorType())
	}
}

func TestSystemProcTools(t *testing.T) {
	tools := systemSkill(t)
	path := "PATH=" + hermeticPath(t, nil)
	proc := tree(t, map[string]string{
		"loadavg": "0.52 0.31 0.20 2/345 6789\n",
		"meminfo": "MemTotal:        1000 kB\nMemFree:          100 kB\nBuffers:           50 kB\nCached:           250 kB\nSwapTotal:   200 kB\nSwapFree:    150 kB\n",
		"uptime":  "93784.12 180000.00\n",
	})
	env := []string{path, "EVOCLAW_PROCFS=" + proc}
	if m := object(t, run(t, tools["load"], nil, env...)); m["load1"] != 0.52 || m["load15"] != 0.2 || m["runnable"] != "2/345" {
		t.Errorf("load = %v", m)
	}
	if m := object(t, run(t, tools["memory"], nil, env...)); m["total_kib"] != 1000.0 || m["available_kib"] != 400.0 || m["used_percent"] != 60.0 || m["swap_free_kib"] != 150.0 {
		t.Errorf("memory (no MemAvailable) = %v", m)
	}
	if m := object(t, run(t, tools["uptime"], nil, env...)); m["seconds"] != 93784.0 || m["human"] != "1d 2h 3m" {
		t.Errorf("uptime = %v", m)
	}
	missing := []string{path, "EVOCLAW_PROCFS=" + t.TempDir()}
	for _, name := range []string{"load", "memory", "uptime"} {
		wantNotFound(t, run(t, tools[name], nil, missing...), "cannot read")
	}

	ws := t.TempDir()
	odd := filepath.Join(ws, `a "quoted" dir`)
	if err := os.Mkdir(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	m := object(t, run(t, tools["disk"], map[string]any{"path": odd}, path))
	if m["path"] != odd || m["size_kib"].(float64) <= 0 {
		t.Errorf("disk = %v", m)
	}
	wantNotFound(t, run(t, tools["disk"], map[string]any{"path": filepath.Join(ws, "nope")}, path), "no such path")
}

// TestSystemOnThisMachine runs every tool against the real /proc and /sys:
// each must succeed with a JSON object or answer not_found, never fail.
func TestSystemOnThisMachine(t *testing.T) {
	for name, tool := range systemSkill(t) {
		args := map[string]any{}
		if name == "gpio_read" {
			args["pin"] = 17
		}
		out := run(t, tool, args)
		switch {
		case out.Status == wire.StatusSuccess:
			object(t, out)
		case out.ErrorType == wire.ErrNotFound:
			t.Logf("%s: not available here: %s", name, out.Error)
		default:
			t.Errorf("%s: %s: %s", name, out.ErrorType, out.Error)
		}
	}
}
