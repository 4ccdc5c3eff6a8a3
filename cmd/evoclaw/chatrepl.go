package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/peterh/liner"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// chatHistoryFile is the REPL's history in the user's cache directory,
// at most liner.HistoryLimit lines, readable only by the user.
const chatHistoryFile = "evoclaw/chat_history"

// maxPromptID bounds the conversation id shown in the prompt: the longest
// id a node takes, so that the id shown can be given to --conversation.
const maxPromptID = wire.MaxAgentIDLen

// repl reads questions with line editing and history until /quit or
// Ctrl-D. Ctrl-C cancels the running chat, or at the prompt says how to
// leave; neither ends the REPL. SIGTERM (ctx) ends it, at the prompt too.
func (s *chatSession) repl(ctx context.Context) error {
	ln, readLine, endInput, dropTyped := newPasteLiner(s.io.stdout)
	s.dropTyped = dropTyped
	defer ln.Close()
	defer context.AfterFunc(ctx, endInput)()
	ln.SetCtrlCAborts(true)
	hist := newChatHistory(ln, s.io.stderr)
	hist.load()
	s.readLine = func(prompt string) (string, error) {
		line, err := readLine(prompt)
		return pastedLine(line), err
	}
	fmt.Fprintln(s.io.stdout, "evoclaw chat: /help for commands, Ctrl-D or /quit to leave")
	if who := s.answerer(ctx); who != "" {
		s.view.note(s.io.stdout, "(answers: "+who+")")
	}
	for {
		line, err := readLine(s.prompt())
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			fmt.Fprintln(s.io.stdout, "(Ctrl-D or /quit to leave)")
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(s.io.stdout)
			s.noteContinue()
			return ctx.Err() // nil: Ctrl-D
		case err != nil:
			return fmt.Errorf("read input: %w", err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		hist.add(line) // a paste stays one line of history
		if line = strings.TrimSpace(pastedLine(line)); line == "" {
			continue
		}
		quit, err := s.handle(ctx, line)
		switch {
		case quit:
			s.noteContinue()
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errInterrupted):
			// the chat is cancelled; back to the prompt
		case err != nil:
			fmt.Fprintln(s.io.stderr, "evoclaw: chat:", err)
		default:
			fmt.Fprintln(s.io.stdout)
		}
	}
}

// answerer is who answers the node's chats, as its status names it (the
// model chain, or the scripted player's label, which says it is not a
// language model); "" when the status cannot be read within a few
// seconds: the first chat says why.
func (s *chatSession) answerer(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var st struct {
		LLM struct {
			Provider string `json:"provider"`
		} `json:"llm"`
	}
	if err := s.client.getJSON(ctx, "GET", "/v1/status", nil, &st); err != nil {
		return ""
	}
	return termLine(st.LLM.Provider, 120)
}

// prompt names the conversation, cut to maxPromptID runes.
func (s *chatSession) prompt() string {
	if s.conv == "" {
		return "evoclaw> "
	}
	id := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1 // liner refuses a prompt with any other character
	}, termLine(s.conv, maxPromptID))
	return "evoclaw [" + id + "]> "
}

// chatHistory keeps the REPL's history in a file; failures are reported
// once and otherwise ignored: history is a convenience.
type chatHistory struct {
	ln     *liner.State
	path   string // empty: no history file
	stderr io.Writer
	warned bool
}

func newChatHistory(ln *liner.State, stderr io.Writer) *chatHistory {
	h := &chatHistory{ln: ln, stderr: stderr}
	if dir, err := os.UserCacheDir(); err == nil {
		h.path = filepath.Join(dir, chatHistoryFile)
	}
	return h
}

// load reads the history file, if any, skipping the lines the line
// editor would refuse (and stop at): longer than maxHistoryLine or not
// UTF-8.
func (h *chatHistory) load() {
	if h.path == "" {
		return
	}
	b, err := os.ReadFile(h.path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			h.warn(err)
		}
		return
	}
	if _, err := h.ln.ReadHistory(strings.NewReader(historyLines(string(b)))); err != nil {
		h.warn(err)
	}
}

// maxHistoryLine bounds a line kept in the history, in bytes: the line
// editor reads its history file in 4 KiB lines and stops at a longer one.
const maxHistoryLine = 4000

// historyLines is text without the lines a history may not hold.
func historyLines(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if l != "" && len(l) <= maxHistoryLine && utf8.ValidString(l) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// add appends line and saves the history: a new file replaces the old one,
// so that a crash leaves one or the other. A line longer than
// maxHistoryLine (a long paste) is not kept.
func (h *chatHistory) add(line string) {
	if len(line) > maxHistoryLine {
		return
	}
	h.ln.AppendHistory(line)
	if h.path == "" {
		return
	}
	if err := h.save(); err != nil {
		h.warn(err)
	}
}

func (h *chatHistory) save() error {
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return err
	}
	tmp := h.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := h.ln.WriteHistory(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, h.path)
}

func (h *chatHistory) warn(err error) {
	if !h.warned {
		fmt.Fprintf(h.stderr, "evoclaw: chat history %s: %v (history is not kept)\n", h.path, err)
		h.warned = true
	}
}
