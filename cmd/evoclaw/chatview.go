package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/evoclaw/evoclaw/actors"
)

// ANSI styles of the chat view on a terminal.
const (
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiReset = "\x1b[0m"
	// ansiClearLine returns to the start of the line and erases it.
	ansiClearLine = "\r\x1b[K"
)

// chatView prints a chat: its progress as it happens and its answer. All
// text from the node goes through termSafe. Not safe for concurrent use:
// the chat's events arrive on one goroutine.
type chatView struct {
	// out receives answers.
	out io.Writer
	// progress receives tool progress; nil hides it (--quiet).
	progress io.Writer
	// attention receives, when progress is hidden, what needs a person
	// (a call waiting for approval): hidden, the chat looked hung until
	// the approval timed out.
	attention io.Writer
	// color styles progress with ANSI codes.
	color bool
	// live shows a "thinking…" indicator, erased when the next line comes;
	// only for a terminal.
	live bool

	thinking bool // the indicator is on screen
}

// style wraps s in an ANSI style when the view is coloured.
func (v *chatView) style(code, s string) string {
	if !v.color {
		return s
	}
	return code + s + ansiReset
}

// line prints one progress line, erasing the indicator first.
func (v *chatView) line(s string) {
	if v.progress == nil {
		return
	}
	v.settle()
	fmt.Fprintln(v.progress, s)
}

// urgent prints a line that needs a person: beside the progress, or to
// attention when progress is hidden.
func (v *chatView) urgent(s string) {
	if v.progress == nil {
		if v.attention != nil {
			fmt.Fprintln(v.attention, s)
		}
		return
	}
	v.line(s)
}

// settle erases the "thinking…" indicator if it is shown.
func (v *chatView) settle() {
	if v.thinking {
		fmt.Fprint(v.progress, ansiClearLine)
		v.thinking = false
	}
}

// onProgress shows one step of the chat.
func (v *chatView) onProgress(p actors.Progress) {
	if v.progress == nil && p.Kind != actors.ProgressApprovalWait {
		return
	}
	who := termLine(p.Agent, 64) + " " + termLine(p.Tool, 64)
	if p.Agent == "" {
		who = termLine(p.Tool, 64)
	}
	switch p.Kind {
	case actors.ProgressLLMStart:
		if v.live && !v.thinking {
			fmt.Fprint(v.progress, v.style(ansiDim, "thinking…"))
			v.thinking = true
		}
	case actors.ProgressLLMEnd:
		switch {
		case p.Status == "error":
			v.line(v.style(ansiRed, "✗") + " " + termLine(fmt.Sprintf("LLM %s %d ms: %s", p.ErrorType, p.ElapsedMS, p.Error), maxProgressLine))
		case p.Text != "":
			// What the model says it is about to do, before its calls.
			v.line(termLine(p.Text, actors.MaxProgressText+len("…")))
		default:
			v.settle()
		}
	case actors.ProgressToolStart:
		s := "→ " + who
		if p.Args != "" && p.Args != "{}" {
			s += " " + p.Args
		}
		v.line(v.style(ansiDim, termLine(s, maxProgressLine)))
	case actors.ProgressApprovalWait:
		// The chat waits for a person: say who decides and how, or it
		// looks hung until the approval's timeout.
		s := fmt.Sprintf("⏸ %s waits for approval %s", who, p.ApprovalID)
		if p.Error != "" {
			s += " (" + p.Error + ")"
		}
		v.urgent(termLine(s, maxProgressLine))
		v.urgent("    " + termLine(fmt.Sprintf("decide: evoclaw approvals approve %s, or evoclaw approvals deny %s", p.ApprovalID, p.ApprovalID), maxProgressLine))
	case actors.ProgressToolOutput:
		for _, l := range strings.Split(strings.TrimRight(p.Output, "\n"), "\n") {
			v.line("    " + termLine(l, maxProgressLine))
		}
	case actors.ProgressToolEnd:
		if p.Status == "error" {
			s := fmt.Sprintf("%s %s %d ms", who, p.ErrorType, p.ElapsedMS)
			if p.Error != "" {
				s += ": " + p.Error
			}
			v.line(v.style(ansiRed, "✗") + " " + termLine(s, maxProgressLine))
			return
		}
		v.line(v.style(ansiGreen, "✓") + " " + termLine(fmt.Sprintf("%s %d ms", who, p.ElapsedMS), maxProgressLine))
	}
}

// onAnswer prints the answer's text.
func (v *chatView) onAnswer(a *chatAnswer) {
	if v.progress != nil {
		v.settle()
	}
	text := strings.TrimRight(termSafe(a.Text, maxAnswerLine), "\n")
	fmt.Fprintln(v.out, text)
}

// ask prints a question the model asks the person, in bold on a
// terminal: it waits for them, unlike the progress around it (dim).
func (v *chatView) ask(w io.Writer, s string) {
	if v.progress != nil {
		v.settle()
	}
	fmt.Fprintln(w, v.style(ansiBold, s))
}

// note prints a line of the client's own (not from the node) beside the
// progress, even when progress is hidden.
func (v *chatView) note(w io.Writer, s string) {
	if v.progress != nil {
		v.settle()
	}
	fmt.Fprintln(w, v.style(ansiDim, s))
}
