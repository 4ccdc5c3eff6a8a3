package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestIdleSummary(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []idleSample
		want    []string
	}{
		{"flat, nothing written", []idleSample{{0, 6144, 100}, {time.Minute, 6144, 100}},
			[]string{"private   6.0 MB →   6.0 MB", "largest   6.0 MB, +0.0 MB", "0 bytes/min"}},
		{"growth and writes", []idleSample{{0, 5120, 0}, {time.Minute, 8192, 4096}, {2 * time.Minute, 7168, 8192}},
			[]string{"5.0 MB →   7.0 MB", "largest   8.0 MB, +2.0 MB", "4096 bytes/min"}},
		{"one reading", []idleSample{{0, 1024, 7}}, []string{"1.0 MB →   1.0 MB", "0 bytes/min"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := idleSeries{name: "x", samples: tc.samples}.summary()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary %q lacks %q", got, w)
				}
			}
		})
	}
}

func TestReadIdleOfThisProcess(t *testing.T) {
	anon, written, err := readIdle(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if anon <= 0 || written < 0 {
		t.Fatalf("RssAnon %d kB, write_bytes %d", anon, written)
	}
	if _, _, err := readIdle(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
