package auditquery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/evoclaw/evoclaw/skills/proc"
)

// ChildCommand is the first argument that makes the evoclaw binary a query
// child (cmd/evoclaw hands it to Child).
const ChildCommand = "audit-query-child"

// DefaultMemoryBytes is the memory a query child may take beyond what it
// holds when it starts, unless a quarter of the machine's memory is less
// (DefaultMemory).
const DefaultMemoryBytes = 256 << 20

// DefaultMemory is DefaultMemoryBytes, or a quarter of the machine's
// memory when that is less (a board with 512 MB gives a query 128 MB).
func DefaultMemory() int64 { return proc.ChildMemory(DefaultMemoryBytes) }

// Yield lowers this process's priority and puts it first in the kernel's
// out-of-memory killer's line (proc.Yield): `evoclaw audit sql` runs its
// statement so, beside a node.
func Yield() { proc.Yield() }

// Bounds of the pipes to and from a child.
const (
	maxRequestBytes = 1 << 20
	// maxReplyBytes is far above what a reply can hold: the values of a
	// result are bounded by Request.Bytes (2 MiB over the API), and JSON
	// at most sextuples a string. It bounds what is kept of stderr too.
	maxReplyBytes = 32 << 20
	// exitGrace is how long a child may take past its own time bound
	// before it is killed.
	exitGrace = 2 * time.Second
	// defaultChildTimeout bounds a request that names no time bound, with
	// a context that has none: a child always has one.
	defaultChildTimeout = time.Minute
)

// childRequest is what a child reads on stdin.
type childRequest struct {
	Request
	// MemoryBytes is the memory the child may take beyond what it held at
	// start; 0 means no bound.
	MemoryBytes int64 `json:"memory_bytes"`
}

// childReply is what a child writes on stdout: one of the two.
type childReply struct {
	Result *Result `json:"result,omitempty"`
	Error  *Error  `json:"error,omitempty"`
}

// Runner runs each request in a new child process: Exe with Args and Env
// (its whole environment, beside passEnv's: a query needs none of the
// node's secrets).
type Runner struct {
	Exe  string
	Args []string
	Env  []string
	// MemoryBytes is what a child may take (see childRequest); 0 means
	// DefaultMemory().
	MemoryBytes int64
}

// NewRunner runs children of this process's own executable, which must
// hand ChildCommand to Child.
func NewRunner() (*Runner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("audit queries: find own executable: %w", err)
	}
	return &Runner{Exe: exe, Args: []string{ChildCommand}}, nil
}

// Run runs req in a child. A failure is an *Error. The child is started
// and stopped by skills/proc: in a process group of its own, killed with it
// at its time bound, and tied to this process so that it does not outlive
// the node.
func (r *Runner) Run(ctx context.Context, req Request) (*Result, error) {
	// The child ends the statement itself at its time bound and answers
	// why; it is killed only when it has not answered exitGrace later (or
	// when ctx ends first: then it ends a little before ctx does).
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d) - exitGrace/4; req.Timeout <= 0 || left < req.Timeout {
			req.Timeout = max(left, time.Millisecond)
		}
	}
	if req.Timeout <= 0 {
		req.Timeout = defaultChildTimeout
	}
	mem := r.MemoryBytes
	if mem <= 0 {
		mem = DefaultMemory()
	}
	in, err := json.Marshal(childRequest{Request: req, MemoryBytes: mem})
	if err != nil {
		return nil, &Error{Kind: KindStatement, Message: fmt.Sprintf("encode the query: %v", err)}
	}
	res, err := proc.Run(ctx, proc.Spec{Path: r.Exe, Args: r.Args, Stdin: in, Env: append(passEnv(), r.Env...),
		Timeout: req.Timeout + exitGrace, MaxOutput: maxReplyBytes})
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, &Error{Kind: KindTimeout, Message: fmt.Sprintf("the statement ran past its time bound (%s)", req.Timeout.Round(time.Millisecond))}
	case err != nil:
		return nil, &Error{Kind: KindUnavailable, Message: fmt.Sprintf("the query process failed: %v", err)}
	case res.StdoutBytes > int64(len(res.Stdout)):
		return nil, &Error{Kind: KindUnavailable, Message: fmt.Sprintf("the query's answer is larger than %d bytes", maxReplyBytes)}
	}

	var reply childReply
	dec := json.NewDecoder(bytes.NewReader(res.Stdout))
	dec.UseNumber() // integers stay exact
	if derr := dec.Decode(&reply); derr == nil && (reply.Result != nil) != (reply.Error != nil) {
		if reply.Error != nil {
			return nil, reply.Error
		}
		if reply.Result.Columns == nil {
			reply.Result.Columns = []string{}
		}
		if reply.Result.Rows == nil {
			reply.Result.Rows = [][]any{}
		}
		return reply.Result, nil
	}
	// No answer: the child died, or was stopped.
	if res.TimedOut {
		return nil, &Error{Kind: KindTimeout, Message: fmt.Sprintf("the statement ran past its time bound (%s)", req.Timeout.Round(time.Millisecond))}
	}
	death, how := proc.ChildDeath(&res)
	switch death {
	case proc.DiedOfMemory:
		return nil, &Error{Kind: KindMemory, Message: fmt.Sprintf("the statement needs more memory than the %d MiB an audit query may use: narrow it (fewer or smaller values)", mem>>20)}
	case proc.DiedKilled:
		return nil, &Error{Kind: KindMemory, Message: "the query process was killed (SIGKILL), most likely because the machine ran short of memory: narrow the statement"}
	}
	if len(res.Stderr) == 0 {
		how += ": no answer"
	}
	return nil, &Error{Kind: KindUnavailable, Message: fmt.Sprintf("the query process failed (%s)", how)}
}

// passEnv is the part of this process's environment a child gets: where
// SQLite may put its temporary files; and a Go runtime that ends on a fatal
// error (out of memory) with one line, without every goroutine's stack.
func passEnv() []string {
	env := []string{"GOTRACEBACK=none"}
	for _, k := range []string{"TMPDIR", "SQLITE_TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Child is the child's side: it reads one request from in, bounds its own
// memory and priority, runs the request and writes the reply to out. It
// returns the process's exit status.
func Child(in io.Reader, out io.Writer) int {
	var req childRequest
	reply := childReply{}
	if err := json.NewDecoder(io.LimitReader(in, maxRequestBytes)).Decode(&req); err != nil {
		reply.Error = &Error{Kind: KindUnavailable, Message: fmt.Sprintf("read the query: %v", err)}
	} else if err := proc.BoundSelf(req.MemoryBytes); err != nil {
		reply.Error = &Error{Kind: KindUnavailable, Message: fmt.Sprintf("bound the query process: %v", err)}
	} else if res, err := Local(context.Background(), req.Request); err != nil {
		var qe *Error
		if !errors.As(err, &qe) {
			qe = &Error{Kind: KindUnavailable, Message: err.Error()}
		}
		reply.Error = qe
	} else {
		reply.Result = res
	}
	if err := json.NewEncoder(out).Encode(reply); err != nil {
		fmt.Fprintf(os.Stderr, "audit query: write the answer: %v\n", err)
		return 1
	}
	return 0
}
