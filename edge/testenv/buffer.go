package testenv

import (
	"bytes"
	"log/slog"
	"sync"
)

// Buffer collects what a logger or a child process writes while the test
// reads it: the program under test writes from its own goroutines, so a bare
// bytes.Buffer would race. The zero value is ready for use.
type Buffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Logger returns a logger that writes text lines at level min and above
// to b.
func (b *Buffer) Logger(min slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: min}))
}
