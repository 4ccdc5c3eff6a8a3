// Package todo provides the design's todowrite and todoread tools: a task
// list per conversation that the model keeps while it works, persisted as
// one small JSON file per conversation in the node's data directory, so it
// survives a restart of the node.
//
// Files are written to a temporary file, synced and renamed, so a crash
// leaves the old list or the new one; Open sweeps temporaries a crash
// left. The store is bounded: items per list, bytes per item, and lists
// kept (the least recently written are removed past the limit).
//
// # Concurrency
//
// A Store is safe for concurrent use.
package todo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/atomicfile"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// Bounds of a Store.
const (
	// MaxItems is the most items in one list.
	MaxItems = 100
	// MaxContentBytes is the longest item text.
	MaxContentBytes = 1000
	// DefaultMaxLists is how many conversations' lists are kept.
	DefaultMaxLists = 1000
)

// Item statuses and priorities.
var (
	statuses   = []string{"pending", "in_progress", "completed", "cancelled"}
	priorities = []string{"high", "medium", "low"}
)

// ErrTooLarge means a list exceeds MaxItems or an item MaxContentBytes.
var ErrTooLarge = errors.New("todo list too large")

// Item is one task of a list.
type Item struct {
	// ID names the item within its list.
	ID string `json:"id"`
	// Content says what to do.
	Content string `json:"content"`
	// Status is pending, in_progress, completed or cancelled.
	Status string `json:"status"`
	// Priority is high, medium or low.
	Priority string `json:"priority"`
}

// list is the file format.
type list struct {
	ConversationID string    `json:"conversation_id"`
	Updated        time.Time `json:"updated"`
	Items          []Item    `json:"items"`
}

// Store keeps the lists in a directory.
type Store struct {
	dir      string
	maxLists int

	mu sync.Mutex // serializes writes, so each list has one writer
}

// Open returns the store in dir, creating it, and removes temporary files
// a crash left behind. maxLists <= 0 means DefaultMaxLists.
func Open(dir string, maxLists int) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open todo store: %w", err)
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	for _, t := range tmps {
		os.Remove(t) // a crash's leftover; the list it was replacing is intact
	}
	if maxLists <= 0 {
		maxLists = DefaultMaxLists
	}
	return &Store{dir: dir, maxLists: maxLists}, nil
}

// file is the list file of a conversation: a hash, so any id is a safe name.
func (s *Store) file(conv string) string {
	h := sha256.Sum256([]byte(conv))
	return filepath.Join(s.dir, hex.EncodeToString(h[:12])+".json")
}

// Read returns the items of conv's list; none when it has no list.
func (s *Store) Read(conv string) ([]Item, error) {
	b, err := os.ReadFile(s.file(conv))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read todo list: %w", err)
	}
	var l list
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("read todo list: corrupt file %s: %w", filepath.Base(s.file(conv)), err)
	}
	return l.Items, nil
}

// Write replaces conv's list with items, checked and filled with defaults
// (status pending, priority medium, ids 1, 2, ...).
func (s *Store) Write(conv string, items []Item) ([]Item, error) {
	if len(items) > MaxItems {
		return nil, fmt.Errorf("%w: %d items, at most %d", ErrTooLarge, len(items), MaxItems)
	}
	seen := map[string]bool{}
	for i := range items {
		it := &items[i]
		it.Content = strings.TrimSpace(it.Content)
		switch {
		case it.Content == "":
			return nil, fmt.Errorf("item %d has no content", i+1)
		case len(it.Content) > MaxContentBytes:
			return nil, fmt.Errorf("%w: item %d is %d bytes, at most %d", ErrTooLarge, i+1, len(it.Content), MaxContentBytes)
		}
		if it.Status == "" {
			it.Status = "pending"
		}
		if it.Priority == "" {
			it.Priority = "medium"
		}
		if !slices.Contains(statuses, it.Status) {
			return nil, fmt.Errorf("item %d: status %q, want one of %s", i+1, it.Status, strings.Join(statuses, ", "))
		}
		if !slices.Contains(priorities, it.Priority) {
			return nil, fmt.Errorf("item %d: priority %q, want one of %s", i+1, it.Priority, strings.Join(priorities, ", "))
		}
		if it.ID == "" {
			it.ID = fmt.Sprint(i + 1)
		}
		if len(it.ID) > 64 || seen[it.ID] {
			return nil, fmt.Errorf("item %d: id %q is repeated or longer than 64 bytes", i+1, it.ID)
		}
		seen[it.ID] = true
	}
	b, err := json.MarshalIndent(list{ConversationID: conv, Updated: time.Now().UTC(), Items: items}, "", "  ")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := atomicfile.Write(s.file(conv), b, 0o600); err != nil {
		return nil, fmt.Errorf("write todo list: %w", err)
	}
	s.trim()
	return items, nil
}

// trim removes the least recently written lists beyond maxLists.
func (s *Store) trim() {
	entries, err := os.ReadDir(s.dir)
	if err != nil || len(entries) <= s.maxLists {
		return
	}
	type f struct {
		name string
		mod  time.Time
	}
	var files []f
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".json") {
			files = append(files, f{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b f) int { return a.mod.Compare(b.mod) })
	for _, x := range files[:max(0, len(files)-s.maxLists)] {
		os.Remove(filepath.Join(s.dir, x.name)) // best effort: the bound is soft by a file or two
	}
}

// Tools returns todowrite and todoread over s. They need no permission:
// the list is the model's own scratch state, private to its conversation.
func Tools(s *Store) []skills.GoTool {
	itemSchema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"id":       map[string]any{"type": "string", "description": "Stable id of the item (default: its position)"},
			"content":  map[string]any{"type": "string", "description": "What to do"},
			"status":   map[string]any{"type": "string", "enum": statuses, "description": "Default pending"},
			"priority": map[string]any{"type": "string", "enum": priorities, "description": "Default medium"},
		},
		"required":             []any{"content"},
		"additionalProperties": false,
	}
	write := skills.GoTool{
		Tool: skills.Tool{
			Name: "todowrite",
			Description: fmt.Sprintf("Replace this conversation's todo list with the given items, to plan and track multi-step work; "+
				"send the whole list each time, with each item's status. At most %d items.", MaxItems),
		},
		Schema: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"todos": map[string]any{"type": "array", "items": itemSchema, "description": "The complete list"}},
			"required":             []any{"todos"},
			"additionalProperties": false,
		},
		Run: func(ctx context.Context, args map[string]any) skills.Output {
			raw, err := json.Marshal(args["todos"])
			var items []Item
			if err == nil {
				err = json.Unmarshal(raw, &items)
			}
			if _, ok := args["todos"].([]any); !ok || err != nil {
				return skills.Failed(wire.ErrInvalidParams, "todowrite: todos must be an array of {content, status, priority, id}")
			}
			items, err = s.Write(skills.CallOf(ctx).ConversationID, items)
			if err != nil {
				code := wire.ErrInvalidParams
				if !errors.Is(err, ErrTooLarge) && !strings.HasPrefix(err.Error(), "item ") {
					code = wire.ErrExecutionFailed
				}
				return skills.Failed(code, "todowrite: "+err.Error())
			}
			return skills.Output{Content: []skills.Block{skills.TextBlock(render(items, ""))}}
		},
	}
	read := skills.GoTool{
		Tool: skills.Tool{
			Name:        "todoread",
			Description: "Show this conversation's todo list, optionally only the items of one status.",
		},
		Schema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"status": map[string]any{"type": "string", "enum": statuses, "description": "Only items of this status"},
			},
			"additionalProperties": false,
		},
		Run: func(ctx context.Context, args map[string]any) skills.Output {
			status, _ := args["status"].(string)
			if status != "" && !slices.Contains(statuses, status) {
				return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("todoread: status %q, want one of %s", status, strings.Join(statuses, ", ")))
			}
			items, err := s.Read(skills.CallOf(ctx).ConversationID)
			if err != nil {
				return skills.Failed(wire.ErrExecutionFailed, "todoread: "+err.Error())
			}
			return skills.Output{Content: []skills.Block{skills.TextBlock(render(items, status))}}
		},
	}
	return []skills.GoTool{write, read}
}

// render shows items one per line: [x] done, [~] in progress, [-] cancelled.
func render(items []Item, status string) string {
	marks := map[string]string{"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}
	var b strings.Builder
	n := 0
	for _, it := range items {
		if status != "" && it.Status != status {
			continue
		}
		n++
		fmt.Fprintf(&b, "%s %s (%s, %s): %s\n", marks[it.Status], it.ID, it.Status, it.Priority, it.Content)
	}
	if n == 0 {
		if status != "" {
			return "no " + status + " items"
		}
		return "the todo list is empty"
	}
	return strings.TrimSuffix(b.String(), "\n")
}
