package toolbox

import (
	"io"
	"sync/atomic"

	"github.com/evoclaw/evoclaw/skills/internal/gittools"
)

// GitChildCommand is the first argument that makes a program a git call
// child: a program that calls RunGitInChildren hands it, with stdin and
// stdout, to GitChild.
const GitChildCommand = gittools.ChildCommand

// GitChild is a git call child's side: it reads one call from in, runs it
// under the memory bound the call names and writes its output to out. It
// returns the process's exit status.
func GitChild(in io.Reader, out io.Writer) int { return gittools.Child(in, out) }

var gitInChildren atomic.Bool

// RunGitInChildren makes the git tools of every Box built afterwards run
// each call in a child process of this program's own executable
// (GitChildCommand), under a memory bound: a crafted object that inflates
// to gigabytes ends the child, not the program. The evoclaw binary calls
// it; a program embedding evoclaw that does not runs git calls in its own
// process, unbounded.
func RunGitInChildren() { gitInChildren.Store(true) }

// gitChild is the runner of git calls: nil for this process.
func gitChild() (*gittools.Runner, error) {
	if !gitInChildren.Load() {
		return nil, nil
	}
	return gittools.NewRunner()
}
