package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadOnlyRefusesFIFO: a FIFO in place of audit.db is refused at once
// by the read-only open that `audit verify`, `audit sql` and the reports
// use; SQLite's open of it waited for a writer for ever.
func TestReadOnlyRefusesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := QueryReadOnly(context.Background(), path, "SELECT 1")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("query of a FIFO: %v, want not a regular file", err)
		}
	case <-time.After(3 * time.Second):
		// Free the old code's open with an empty writer, then fail.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("a read-only query of a FIFO still waiting after 3s")
	}
}
