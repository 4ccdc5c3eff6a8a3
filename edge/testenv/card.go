package testenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Card is a small ext4 file system on a loop device, mounted with
// errors=remount-ro as a Pi's card is, that a test can make the kernel
// turn read-only under running code, as it does to a card after write
// errors.
type Card struct {
	// Dir is where the card is mounted.
	Dir string

	t       testing.TB
	img     string
	trigger string // the kernel's ext4 error trigger of the card's device
	mounted bool
}

// NewCard mounts a new 64 MiB card (sparse) at a new directory; it is unmounted
// (its loop device freed) at cleanup. It skips the test, saying why,
// without root, mkfs.ext4, loop devices or the kernel's ext4 error
// trigger (/sys/fs/ext4/DEV/trigger_fs_error).
func NewCard(t testing.TB) *Card {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root to mount a loop device")
	}
	for _, tool := range []string{"mkfs.ext4", "e2fsck", "mount", "umount", "findmnt"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIP: %s is not installed", tool)
		}
	}
	dir := t.TempDir()
	c := &Card{Dir: filepath.Join(dir, "card"), t: t, img: filepath.Join(dir, "card.img")}
	if err := os.Mkdir(c.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(c.img, 64<<20); err != nil {
		t.Fatal(err)
	}
	if err := run("mkfs.ext4", "-q", "-F", c.img); err != nil {
		t.Fatal(err)
	}
	if err := c.mount(); err != nil {
		t.Skipf("SKIP: cannot mount a loop device here: %v", err)
	}
	t.Cleanup(func() {
		if c.mounted {
			if err := run("umount", c.Dir); err != nil {
				t.Error(err)
			}
		}
	})
	out, err := exec.Command("findmnt", "-n", "-o", "SOURCE", c.Dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	c.trigger = filepath.Join("/sys/fs/ext4", filepath.Base(strings.TrimSpace(string(out))), "trigger_fs_error")
	if _, err := os.Stat(c.trigger); err != nil {
		t.Skipf("SKIP: the kernel offers no ext4 error trigger: %v", err)
	}
	return c
}

// TurnReadOnly makes the kernel see an error on the card: it turns it
// read-only (errors=remount-ro) at once.
func (c *Card) TurnReadOnly() {
	c.t.Helper()
	if err := os.WriteFile(c.trigger, []byte("1"), 0); err != nil {
		c.t.Fatal(err)
	}
}

// Repair unmounts the card, checks it (e2fsck) and mounts it again, as a
// reboot does. Whatever holds files on it must be closed first.
func (c *Card) Repair() {
	c.t.Helper()
	if err := run("umount", c.Dir); err != nil {
		c.t.Fatal(err)
	}
	c.mounted = false
	if err := exec.Command("e2fsck", "-f", "-y", c.img).Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() > 1 { // 1: errors corrected
			c.t.Fatalf("e2fsck: %v", err)
		}
	}
	if err := c.mount(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Card) mount() error {
	if err := run("mount", "-o", "loop,errors=remount-ro", c.img, c.Dir); err != nil {
		return err
	}
	c.mounted = true
	return nil
}

// run runs a command, its output in the error when it fails.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return errors.New(name + ": " + err.Error() + ": " + strings.TrimSpace(string(out)))
	}
	return nil
}
