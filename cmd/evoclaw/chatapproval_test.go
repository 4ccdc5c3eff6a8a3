package main

import (
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// TestApprovalArgumentsShownInFull: what a person approves is the model's
// to write, and they read all of it. `approvals list` cut the arguments to
// 60 characters and the chat to 200 bytes: a call whose start read
// harmless ended, unseen, with what a person would deny. Now the list
// prints the arguments of each pending approval that its PARAMS cell cuts
// below the table, and the chat prints them after the approval notice.
func TestApprovalArgumentsShownInFull(t *testing.T) {
	const tail = "; rm -rf /srv/backups"
	params := `{"command":"echo` + strings.Repeat(" x", 100) + tail + `"}`
	f := newFakeNode(t)
	now := time.Now()
	f.mu.Lock()
	f.approvals = []persistence.Approval{
		{ID: "apr-1", State: persistence.ApprovalPending, Tool: "pi1__bash", Params: params, Requested: now, Expires: now.Add(time.Minute)},
		{ID: "apr-2", State: persistence.ApprovalPending, Tool: "pi1__sysinfo", Params: `{}`, Requested: now, Expires: now.Add(time.Minute)},
		{ID: "apr-3", State: persistence.ApprovalDenied, Tool: "pi1__bash", Params: params, Requested: now, Expires: now},
	}
	f.mu.Unlock()

	code, out, errOut := runArgs("approvals", "list", "--data-dir", f.dir)
	want := "\napr-1 pi1__bash arguments: " + params + "\n"
	if code != 0 || !strings.HasSuffix(out, want) || strings.Count(out, tail) != 1 {
		t.Fatalf("approvals list: exit %d, want it to end %q\n%s%s", code, want, out, errOut)
	}

	code, out, errOut = runArgs("chat", "--data-dir", f.dir, "approval")
	want = "⏸ pi1 bash waits for approval apr-1 (approvals rule 1)\n" +
		"    decide: evoclaw approvals approve apr-1, or evoclaw approvals deny apr-1\n" +
		"    arguments: " + params + "\n"
	if code != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("chat: exit %d, want %q in\n%s%s", code, want, out, errOut)
	}

	// --quiet hides the progress, not a wait for a person: hidden, the
	// chat looked hung until the approval timed out.
	code, out, errOut = runArgs("chat", "--quiet", "--data-dir", f.dir, "approval")
	if code != 0 || !strings.Contains(errOut, want) || strings.Contains(out+errOut, "→ ") {
		t.Fatalf("chat --quiet: exit %d, want %q and no other progress in\n%s%s", code, want, out, errOut)
	}

	// Arguments past the old 4 KiB an approval kept are shown whole too.
	long := `{"command":"echo` + strings.Repeat(" x", 20<<10) + tail + `"}`
	f.mu.Lock()
	f.approvals[0].Params = long
	f.mu.Unlock()
	code, out, errOut = runArgs("chat", "--data-dir", f.dir, "approval")
	if code != 0 || !strings.Contains(errOut, "    arguments: "+long+"\n") {
		t.Fatalf("chat, 40 KiB of arguments: exit %d, they are not shown whole (%d bytes of output)", code, len(out+errOut))
	}

	// A node that cannot find it: the chat says where to look.
	f.mu.Lock()
	f.approvals = nil
	f.mu.Unlock()
	code, out, errOut = runArgs("chat", "--data-dir", f.dir, "approval")
	if code != 0 || !strings.Contains(errOut, "    (its arguments could not be read: ") || !strings.Contains(errOut, "no approval apr-1; evoclaw approvals list shows them)\n") {
		t.Fatalf("chat, approval gone: exit %d\n%s%s", code, out, errOut)
	}
}
