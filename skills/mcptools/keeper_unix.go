//go:build unix

package mcptools

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// keeperName is the name a keeper runs under (its $0), which shows in ps.
const keeperName = "evoclaw-mcp-keeper"

// keeperScript waits for the end of its fd 3, which only the agent can
// write to, and then kills its process group: a killed agent's pipe ends
// with it, however it died.
const keeperScript = `read -r _ <&3; kill -s KILL 0`

// keeper is a shell in a stdio server's process group that kills the
// group when the agent dies. The parent-death signal kills the server
// alone; what the server started in its group (npx's node, a shell's
// background job) would be reparented and run on until the agent's next
// start found its group (groupFile). The keeper ends that within
// milliseconds, on every Unix system.
type keeper struct {
	cmd  *exec.Cmd
	pipe *os.File      // the agent's end: held open while the agent lives
	done chan struct{} // closed once the keeper is reaped
}

// startKeeper starts the keeper of the group pgid. It is not started
// with the parent-death signal: it must outlive the agent to act.
func startKeeper(pgid int) (*keeper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start keeper: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", keeperScript, keeperName)
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.Env = []string{"PATH=" + envPath()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start keeper: %w", err)
	}
	k := &keeper{cmd: cmd, pipe: w, done: make(chan struct{})}
	go func() {
		_ = k.cmd.Wait() // it ends killed, with its group
		close(k.done)
	}()
	return k, nil
}

// stop ends the keeper once its group was killed, which killed it, and
// waits for it; nil does nothing.
func (k *keeper) stop() {
	if k == nil {
		return
	}
	k.pipe.Close() // a keeper still running kills its group, which is dead already
	<-k.done
}
