package evoclawtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// LoopScript is a tool that appends a line to the file named by its
// --marker argument ten times a second until it is killed. With --bg set
// to "yes" it first starts another such loop in the background, in the
// tool's process group, writing to BgMarker(marker): the kind of leftover
// a killed tool leaves behind. Each loop's command line names its own file
// only, so PidsWith tells them apart.
const LoopScript = `#!/bin/sh
while [ $# -gt 1 ]; do
  case "$1" in
    --marker) m=$2 ;;
    --bg) bg=$2 ;;
  esac
  shift 2
done
if [ "$bg" = yes ]; then
  sh -c 'while :; do echo x >> "$0"; sleep 0.1; done' "$(dirname "$m")/bg-$(basename "$m")" &
fi
while :; do echo x >> "$m"; sleep 0.1; done
`

// BgMarker is the file the background loop of a tool writing marker
// appends to.
func BgMarker(marker string) string {
	return filepath.Join(filepath.Dir(marker), "bg-"+filepath.Base(marker))
}

// LoopSkill writes a skill directory with one tool per sandboxing kind,
// named "loop_" and the kind ("loop_none", "loop_bubblewrap",
// "loop_firejail"), each running LoopScript with a timeout of a minute,
// and returns the directory.
func LoopSkill(t testing.TB, kinds ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "loop"), []byte(LoopScript), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("[skill]\nname = \"loop\"\nversion = \"1.0.0\"\ndescription = \"writes a marker until killed\"\n")
	for _, k := range kinds {
		fmt.Fprintf(&b, `
[[tools]]
name = "loop_%s"
binary = "bin/loop"
description = "loops"
timeout_ms = 60000
sandboxing = %q
[tools.parameters]
required = ["marker"]
[tools.parameters.properties.marker]
type = "string"
description = "file to append to"
[tools.parameters.properties.bg]
type = "string"
description = "yes: leave a background copy"
`, k, k)
	}
	if err := os.WriteFile(filepath.Join(dir, "skill.toml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// BashLoop is a bash command doing what LoopScript does, marker being the
// file it appends to.
func BashLoop(marker string, bg bool) string {
	cmd := fmt.Sprintf("while :; do echo x >> %q; sleep 0.1; done", marker)
	if bg {
		cmd = fmt.Sprintf(`sh -c 'while :; do echo x >> "$0"; sleep 0.1; done' %q & `, BgMarker(marker)) + cmd
	}
	return cmd
}

// Size is the size of the file at path, or -1 when it does not exist.
func Size(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// Grows reports whether the file at path grows within d.
func Grows(path string, d time.Duration) bool {
	before := Size(path)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if Size(path) > before {
			return true
		}
		time.Sleep(20 * time.Millisecond) // polling a file another process writes
	}
	return false
}
