package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Auto is the [builtin] sandbox setting that picks Bubblewrap when
// Probe finds it usable and None otherwise; it is not a Policy kind.
const Auto = "auto"

// probeTimeout bounds one Probe.
const probeTimeout = 10 * time.Second

// Probe runs a trivial command (/bin/sh -c "exit 0") in a sandbox of kind,
// with a scratch workspace and no network, and returns why it failed:
// ErrUnavailable when the program is missing, otherwise the sandbox's
// own complaint (user namespaces disabled, no permission to mount, ...).
// lookPath nil means exec.LookPath. It takes a few milliseconds; callers
// run it once, at start.
func Probe(ctx context.Context, kind string, lookPath func(string) (string, error)) error {
	ws, err := os.MkdirTemp("", "evoclaw-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("probe %s: %w", kind, err)
	}
	defer os.RemoveAll(ws)
	prog, args, err := Wrap(Policy{Kind: kind, Writable: []string{ws}, LookPath: lookPath}, "/bin/sh", []string{"-c", "exit 0"}, ws)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 512 {
			msg = msg[len(msg)-512:]
		}
		return fmt.Errorf("probe %s: %s cannot run a command: %w: %s", kind, prog, err, msg)
	}
	return nil
}
