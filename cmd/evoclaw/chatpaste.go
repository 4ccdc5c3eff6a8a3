package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/peterh/liner"
)

// A paste of several lines into the REPL is one message: the line editor
// ends a line at each line break, so each pasted line was once sent as a
// chat of its own. The REPL reads the terminal through pasteJoin, which
// turns the line breaks of a paste into pastedBreak; the person sees one
// line, edits it, sends it with Enter, and the REPL turns the marks back
// into line breaks.

// pastedBreak stands for a pasted line break in the line being edited
// (U+2424 SYMBOL FOR NEWLINE, one column wide).
const pastedBreak = "\u2424"

// Bracketed paste (xterm and most terminals): while it is on, the terminal
// wraps what is pasted in pasteStart and pasteEnd.
const (
	bracketedPasteOn  = "\x1b[?2004h"
	bracketedPasteOff = "\x1b[?2004l"
	pasteStart        = "\x1b[200~"
	pasteEnd          = "\x1b[201~"
)

// pasteJoin rewrites what the terminal sends. Inside a bracketed paste,
// CR, LF and CR LF become pastedBreak and the brackets are dropped. A
// terminal without bracketed paste sends a paste in one read: a line break
// followed by more input in the same read was pasted, not typed (nobody
// types Enter and the next key within one read), and becomes pastedBreak
// too. Not safe for concurrent use.
type pasteJoin struct {
	inPaste bool
	// carry is the start of what may be a bracket, held for the next read.
	carry []byte
}

// feed returns chunk (one read from the terminal) rewritten.
func (p *pasteJoin) feed(chunk []byte) []byte {
	in := append(p.carry, chunk...)
	p.carry = nil
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		if in[i] == 0x1b {
			rest := in[i:]
			switch {
			case bytes.HasPrefix(rest, []byte(pasteStart)):
				p.inPaste = true
				i += len(pasteStart)
				continue
			case bytes.HasPrefix(rest, []byte(pasteEnd)):
				p.inPaste = false
				i += len(pasteEnd)
				continue
			case len(rest) < len(pasteStart) && (strings.HasPrefix(pasteStart, string(rest)) || strings.HasPrefix(pasteEnd, string(rest))):
				p.carry = append([]byte(nil), rest...)
				return out
			}
		}
		c := in[i]
		if c != '\r' && c != '\n' {
			out = append(out, c)
			i++
			continue
		}
		n := 1
		if c == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			n = 2
		}
		// a typed Enter ends the read; a pasted one has more after it
		if p.inPaste || i+n < len(in) && !bytes.HasPrefix(in[i+n:], []byte(pasteEnd)) {
			out = append(out, pastedBreak...)
		} else {
			out = append(out, in[i:i+n]...)
		}
		i += n
	}
	return out
}

// pastedLine turns the pastedBreak marks of a line read back into line
// breaks.
func pastedLine(line string) string {
	return strings.ReplaceAll(line, pastedBreak, "\n")
}

// joinPastes copies the terminal tty to w through a pasteJoin until a
// read fails, then closes w. End of file on a terminal is Ctrl-D at the
// start of a line typed while a chat runs (the terminal is then in line
// mode): it is passed on as the Ctrl-D it was, and reading goes on.
func joinPastes(tty io.Reader, w io.WriteCloser) {
	defer w.Close()
	var p pasteJoin
	buf := make([]byte, 4096)
	for {
		n, err := tty.Read(buf)
		out := p.feed(buf[:n])
		if n == 0 && errors.Is(err, io.EOF) {
			out, err = []byte{0x04}, nil
		}
		if len(out) > 0 {
			if _, werr := w.Write(out); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// newPasteLiner is the REPL's line editor reading the terminal through
// joinPastes, and its prompt, which turns bracketed paste on while it
// waits and gives pasted line breaks as pastedBreak. endInput ends the
// editor's input: a prompt waiting returns io.EOF (the editor itself
// cannot be woken). dropTyped drops what was typed since the last prompt
// and not read yet, and says how many bytes; call it only while no prompt
// waits. The copying goroutine ends with the terminal, as the editor's
// own reader does.
func newPasteLiner(out io.Writer) (ln *liner.State, prompt lineReader, endInput func(), dropTyped func() int) {
	r, w, err := os.Pipe()
	if err != nil {
		ln := liner.NewLiner()
		return ln, ln.Prompt, func() {}, func() int { return flushTyped(os.Stdin) }
	}
	// The editor reads os.Stdin as it is when made (its terminal modes
	// are set on descriptor 0 whatever os.Stdin is).
	tty := os.Stdin
	os.Stdin = r
	ln = liner.NewLiner()
	os.Stdin = tty
	go joinPastes(tty, w)
	prompt = func(p string) (string, error) {
		fmt.Fprint(out, bracketedPasteOn)
		defer fmt.Fprint(out, bracketedPasteOff)
		return ln.Prompt(p)
	}
	dropTyped = func() int {
		// What joinPastes copied already waits in the pipe; what it has
		// not read yet, in the terminal.
		dropped := flushTyped(tty)
		n := pendingInput(r)
		buf := make([]byte, min(n, 64<<10))
		for left := n; left > 0; {
			m, err := r.Read(buf[:min(left, len(buf))])
			left -= m
			if err != nil {
				break
			}
		}
		return dropped + n
	}
	return ln, prompt, func() { _ = w.Close() }, dropTyped
}
