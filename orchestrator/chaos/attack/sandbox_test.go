//go:build linux

package attack

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/skills/sandbox"
	"github.com/evoclaw/evoclaw/skills/sandbox/sandboxtest"
)

// sandboxEscapes: from inside each sandbox, as root, remount the file
// system, make a device, open raw sockets, read /etc/shadow and the node's
// secrets, and dial host unix sockets.
func sandboxEscapes(t *testing.T, b *board) {
	for _, e := range []struct{ kind, program, pkg string }{
		{sandbox.Bubblewrap, "bwrap", "bubblewrap"},
		{sandbox.Firejail, "firejail", "firejail"},
	} {
		c := b.class("sandbox escape ("+e.kind+")", true)
		t.Run(e.kind, func(t *testing.T) {
			testenv.Find(t, e.program, e.pkg)
			w := sandboxtest.NewWorld(t)
			ops := []string{
				"remount:/", "remount:" + w.WS, "bindmount:" + w.WS, "mknod:" + filepath.Join(w.WS, "mem"),
				"raw:", "packet:", "setuid:",
				"read:/etc/shadow", "read:" + filepath.Join(w.Data, "http-token"), "read:" + filepath.Join(w.Data, "mqtt-users"),
				"read:" + filepath.Join(w.Home, ".ssh-key"), "write:" + filepath.Join(w.Data, "planted"),
				"dial:/run/dbus/system_bus_socket", "dial:/var/run/docker.sock", "dial:/run/systemd/private",
			}
			for _, s := range w.Sockets {
				ops = append(ops, "dial:"+s)
			}
			got := w.Run(t, e.kind, ops...)
			for _, op := range ops {
				c.try(strings.HasPrefix(got[op], "denied"), op+" "+got[op])
			}
			// The probe itself must have worked: the workspace is writable.
			if res := w.Run(t, e.kind, "write:"+filepath.Join(w.WS, "ok")); res["write:"+filepath.Join(w.WS, "ok")] != "ok" {
				t.Errorf("the probe cannot write its workspace in %s: %v", e.kind, res)
			}
		})
	}
}
