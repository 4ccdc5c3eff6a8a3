package proc

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// limitsEnv makes this test binary report the limits BoundSelf set
// (limitsChild, from TestMain).
const limitsEnv = "EVOCLAW_PROC_TEST_LIMITS"

type limitsReport struct {
	Nice     []int  // each thread's nice value, from /proc
	DataCur  uint64 // RLIMIT_DATA after BoundSelf
	DataHeld int64  // VmData before it, bytes
	OOMScore string // oom_score_adj after it
	Err      string
}

// limitsChild runs BoundSelf(64 MiB) in this process and prints what it
// set.
func limitsChild() int {
	var r limitsReport
	held, err := procKB("/proc/self/status", "VmData:")
	r.DataHeld = held << 10
	if err == nil {
		err = BoundSelf(64 << 20)
	}
	if err != nil {
		r.Err = err.Error()
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_DATA, &lim); err == nil {
		r.DataCur = lim.Cur
	}
	if b, err := os.ReadFile("/proc/self/oom_score_adj"); err == nil {
		r.OOMScore = strings.TrimSpace(string(b))
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis; nice is the 19th
		// field of the line, the 17th after it.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if n, err := strconv.Atoi(f[16]); err == nil {
			r.Nice = append(r.Nice, n)
		}
	}
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

// TestBoundSelf: a bounded child (an audit query's, a git call's) runs at
// nice 10 on every thread, first in the out-of-memory killer's line, with
// its data size bounded to what it held plus its memory.
func TestBoundSelf(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), limitsEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var r limitsReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Err != "" || len(r.Nice) == 0 || r.OOMScore != "1000" {
		t.Fatalf("BoundSelf: %+v", r)
	}
	for _, n := range r.Nice {
		if n != childNice {
			t.Fatalf("thread nice values %v, want all %d", r.Nice, childNice)
		}
	}
	// VmData may grow a little between its reading and BoundSelf's.
	if lo, hi := uint64(r.DataHeld+64<<20), uint64(r.DataHeld+72<<20); r.DataCur < lo || r.DataCur > hi {
		t.Fatalf("RLIMIT_DATA %d, want %d to %d: what the child held (%d) plus 64 MiB", r.DataCur, lo, hi, r.DataHeld)
	}
}
