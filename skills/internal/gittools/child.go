package gittools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// A git call reads objects whose size the repository declares: a loose
// object of 1 MB, or a 50 KB delta in a pack, may inflate to gigabytes,
// and go-git reads every object it needs whole into memory, sizes unchecked.
// A model that may write files can plant one. So a call can run in a child
// process of the binary (Options.Child), with a bound on its memory: past
// it the child dies, not the agent, and the call fails saying why.

// ChildCommand is the first argument that makes the evoclaw binary a git
// call child (cmd/evoclaw hands it to Child).
const ChildCommand = "git-tool-child"

// DefaultMemoryBytes is the memory a git child may take beyond what it
// holds when it starts, unless a quarter of the machine's memory is less
// (DefaultMemory).
const DefaultMemoryBytes = 256 << 20

// DefaultMemory is DefaultMemoryBytes, or a quarter of the machine's
// memory when that is less (a board with 512 MB gives a git call 128 MB).
func DefaultMemory() int64 { return proc.ChildMemory(DefaultMemoryBytes) }

const (
	// maxRequestBytes bounds a call read by a child: the options and the
	// model's arguments (a commit message, a list of paths).
	maxRequestBytes = 4 << 20
	// replySlack is what a reply may hold beyond its diff: status, log and
	// branch lines, JSON's escapes.
	replySlack = 8 << 20
	// defaultChildTimeout bounds a call whose context has no deadline: a
	// child always has one.
	defaultChildTimeout = 5 * time.Minute
)

// childRequest is what a child reads on stdin.
type childRequest struct {
	Options Options        `json:"options"`
	Tool    string         `json:"tool"`
	Args    map[string]any `json:"args"`
	// Timeout is the call's time bound; the child is killed at it.
	Timeout time.Duration `json:"timeout"`
	// MemoryBytes is what the child may take beyond what it held at
	// start; 0 means no bound.
	MemoryBytes int64 `json:"memory_bytes"`
}

// childReply is what a child writes on stdout.
type childReply struct {
	Output *skills.Output `json:"output"`
}

// Runner runs each git call in a new child process: Exe with Args, and
// an environment of Env beside what childEnv passes (none of the agent's
// secrets).
type Runner struct {
	Exe  string
	Args []string
	Env  []string
	// MemoryBytes bounds a child (see childRequest); 0 means
	// DefaultMemory().
	MemoryBytes int64
}

// NewRunner runs children of this process's own executable, which must
// hand ChildCommand to Child.
func NewRunner() (*Runner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("git tools: find own executable: %w", err)
	}
	return &Runner{Exe: exe, Args: []string{ChildCommand}}, nil
}

// run runs tool with args in a child. The child is started and stopped by
// skills/proc: in a process group of its own, killed at ctx's deadline or
// end, tied to this process so that it does not outlive it.
func (r *Runner) run(ctx context.Context, o Options, tool string, args map[string]any) skills.Output {
	timeout := defaultChildTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if timeout <= 0 {
		return timedOut(ctx, tool)
	}
	mem := r.MemoryBytes
	if mem <= 0 {
		mem = DefaultMemory()
	}
	in, err := json.Marshal(childRequest{Options: o, Tool: tool, Args: args, Timeout: timeout, MemoryBytes: mem})
	if err != nil {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("%s: encode the arguments: %v", tool, err))
	}
	if len(in) > maxRequestBytes {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("%s: the arguments take %d bytes, more than the %d MiB a git call takes", tool, len(in), maxRequestBytes>>20))
	}
	res, err := proc.Run(ctx, proc.Spec{Path: r.Exe, Args: r.Args, Stdin: in, Env: append(childEnv(), r.Env...),
		Timeout: timeout, MaxOutput: replySlack + 6*o.MaxDiffBytes})
	switch {
	case err != nil && ctx.Err() != nil:
		return timedOut(ctx, tool)
	case err != nil:
		return skills.Failed(wire.ErrInternal, fmt.Sprintf("%s: start the git process: %v", tool, err))
	case res.TimedOut:
		return timedOut(ctx, tool)
	}
	var reply childReply
	if json.Unmarshal(res.Stdout, &reply) == nil && reply.Output != nil {
		return *reply.Output
	}
	// No answer: the child died.
	death, how := proc.ChildDeath(&res)
	switch death {
	case proc.DiedOfMemory:
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("%s: the repository needs more memory than the %d MiB a git call may use: "+
			"it holds an object too large to read (a huge file, or a damaged or crafted object)", tool, mem>>20))
	case proc.DiedKilled:
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("%s: the git process was killed (SIGKILL), most likely because the machine ran short of memory", tool))
	}
	if len(res.Stderr) == 0 && res.StdoutBytes > int64(len(res.Stdout)) {
		how += fmt.Sprintf(": an answer larger than %d bytes", len(res.Stdout))
	}
	return skills.Failed(wire.ErrInternal, fmt.Sprintf("%s: the git process failed (%s)", tool, how))
}

// timedOut is the answer of a call that ran past its deadline, as
// deadlined gives it.
func timedOut(ctx context.Context, tool string) skills.Output {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = context.DeadlineExceeded
	}
	return skills.Failed(wire.ErrTimeout, fmt.Sprintf("%s: no result before the deadline (%v)", tool, cause))
}

// childEnv is the environment a child gets: a Go runtime that ends on a
// fatal error (out of memory) with one line, without every goroutine's
// stack; and the time zone a commit's date is written in.
func childEnv() []string {
	env := []string{"GOTRACEBACK=none"}
	for _, k := range []string{"TZ", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Child is the child's side: it reads one call from in, bounds its own
// memory and priority, runs the call and writes its output to out. It
// returns the process's exit status.
func Child(in io.Reader, out io.Writer) int {
	var req childRequest
	var o skills.Output
	if err := json.NewDecoder(io.LimitReader(in, maxRequestBytes)).Decode(&req); err != nil {
		o = skills.Failed(wire.ErrInternal, fmt.Sprintf("git process: read the call: %v", err))
	} else if err := proc.BoundSelf(req.MemoryBytes); err != nil {
		o = skills.Failed(wire.ErrInternal, fmt.Sprintf("%s: bound the git process: %v", req.Tool, err))
	} else {
		o = req.run()
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(childReply{Output: &o}); err != nil {
		fmt.Fprintf(os.Stderr, "git process: encode the answer: %v\n", err)
		return 1
	}
	if _, err := out.Write(buf.Bytes()); err != nil {
		fmt.Fprintf(os.Stderr, "git process: write the answer: %v\n", err)
		return 1
	}
	return 0
}

// run runs the call in this process, a panic answered as Toolset.Call
// answers one.
func (req childRequest) run() skills.Output {
	o, err := req.Options.withDefaults()
	if err != nil {
		return skills.Failed(wire.ErrInternal, err.Error())
	}
	for _, t := range o.tools() {
		if t.Tool.Name != req.Tool {
			continue
		}
		ctx := context.Background()
		if req.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, req.Timeout)
			defer cancel()
		}
		if out, ok := skills.RunDetached(ctx, req.Tool, func() {}, func() skills.Output { return t.Run(ctx, req.Args) }); ok {
			return out
		}
		return timedOut(ctx, req.Tool)
	}
	return skills.Failed(wire.ErrNotFound, fmt.Sprintf("git process: no git tool %q", req.Tool))
}
