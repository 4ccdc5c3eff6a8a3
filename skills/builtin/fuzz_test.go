package builtin

import (
	"bufio"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
)

// FuzzResolve checks the lexical jail: whatever the path argument, a
// result is a clean relative name that, joined to the workspace, stays
// under it; an absolute path inside the workspace maps to its relative
// name.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a.txt", "../x", "/srv/ws/a", "/srv/wsx", "a/../../b", "./././", "/", "//srv//ws//a/..", "a\x00b", "..."} {
		f.Add(s)
	}
	const ws = "/srv/ws"
	f.Fuzz(func(t *testing.T, p string) {
		name, err := resolve(ws, p)
		if err != nil {
			return
		}
		if name == "" || path.IsAbs(name) || name != path.Clean(name) || name == ".." || strings.HasPrefix(name, "../") {
			t.Fatalf("resolve(%q) = %q: not a clean relative name", p, name)
		}
		full := path.Join(ws, name)
		if full != ws && !strings.HasPrefix(full, ws+"/") {
			t.Fatalf("resolve(%q) = %q leaves the workspace (%s)", p, name, full)
		}
		if path.IsAbs(p) && path.Clean(p) != full {
			t.Fatalf("resolve(%q) = %q, which is not the same place", p, name)
		}
	})
}

// FuzzReadLines compares the read tool's paging with a plain reference:
// split the text into lines and take lines offset..offset+limit-1.
func FuzzReadLines(f *testing.F) {
	f.Add("a\nb\nc\n", int64(1), int64(2))
	f.Add("no newline", int64(1), int64(5))
	f.Add("x\n\n\ny", int64(3), int64(1))
	f.Add(strings.Repeat("long line ", 20)+"\nshort\n", int64(1), int64(10))
	o, err := Options{Dir: "/w", MaxReadLines: 50, MaxReadBytes: 64}.withDefaults()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, offset, limit int64) {
		if offset < 1 || limit < 1 || offset > 100 || limit > 50 || strings.ContainsRune(text, 0) {
			return
		}
		br := bufio.NewReaderSize(strings.NewReader(text), 16) // small buffer: lines longer than it
		out := o.readLines(context.Background(), br, "f", offset, limit)
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if offset > int64(len(lines)) {
			if offset == 1 && text == "" {
				return
			}
			if out.ErrorType() == "" {
				t.Fatalf("offset %d past %d lines accepted: %q", offset, len(lines), out.Text())
			}
			return
		}
		want := strings.Join(lines[offset-1:min(int64(len(lines)), offset-1+limit)], "")
		got := out.Text()
		if i := strings.LastIndex(got, "\n["); i >= 0 && out.Truncated {
			got = got[:i] // the footer explaining the cut
		}
		if len(want) <= o.MaxReadBytes && got != want {
			t.Fatalf("readLines(offset %d, limit %d) = %q, want %q", offset, limit, got, want)
		}
		if len(want) > o.MaxReadBytes && (!strings.HasPrefix(want, got) || len(got) > o.MaxReadBytes) {
			t.Fatalf("cut read = %q, want a prefix of %q of at most %d bytes", got, want, o.MaxReadBytes)
		}
	})
}

// FuzzDenied checks that the guard's catastrophic cases stay refused
// whatever follows them or however they are cased and spaced.
func FuzzDenied(f *testing.F) {
	f.Add("", "now")
	f.Add("x; ", "-h now")
	f.Fuzz(func(t *testing.T, prefix, suffix string) {
		if strings.ContainsAny(prefix, "\"'`$#") || strings.HasSuffix(strings.TrimSpace(prefix), "\\") {
			return // quoting or comments can hide a command, by design of the shell
		}
		sep := "; "
		if strings.TrimSpace(prefix) == "" {
			prefix, sep = "", ""
		}
		for _, c := range []string{"sudo ", "SHUTDOWN ", "reboot ", "rm  -rf  / ", "mkfs.ext4 "} {
			cmd := prefix + sep + c + " " + suffix
			if denied(cmd) == "" {
				t.Fatalf("%q was allowed", cmd)
			}
		}
	})
}

// FuzzEachLine compares grep's line reader with a plain reference: split
// the text at "\n", drop one "\r" before each, and count the lines longer
// than the bound instead of passing them. The reader's buffer is smaller
// than the bound, so lines span several reads.
func FuzzEachLine(f *testing.F) {
	f.Add("a\nb\r\nc", uint8(8))
	f.Add(strings.Repeat("x", 40)+"\nshort\n"+strings.Repeat("y", 17)+"\r\n", uint8(17))
	f.Add("\r\n\n\r\r\n", uint8(1))
	f.Add("no newline at all", uint8(4))
	f.Fuzz(func(t *testing.T, text string, bound uint8) {
		maxLine := int(bound)
		var want []string // "number:line" of each line passed
		wantLong := 0
		for i, l := range strings.SplitAfter(text, "\n") {
			if l == "" {
				continue // after the last newline
			}
			if l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r"); len(l) > maxLine {
				wantLong++
			} else {
				want = append(want, fmt.Sprintf("%d:%s", i+1, l))
			}
		}
		var got []string
		long := eachLine(nil, bufio.NewReaderSize(strings.NewReader(text), 16), maxLine, func(n int, line []byte) bool {
			got = append(got, fmt.Sprintf("%d:%s", n, line))
			return true
		})
		if long != wantLong || !slices.Equal(got, want) {
			t.Fatalf("eachLine(%q, %d) = %q, %d long; want %q, %d long", text, maxLine, got, long, want, wantLong)
		}
	})
}
