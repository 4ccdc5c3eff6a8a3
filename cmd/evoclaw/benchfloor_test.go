package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// A process tool's floor is one MQTT round trip, one spawn and a commit on
// each side; a built-in tool's has no spawn. The bench prints each round
// trip's median against its floor.
func TestFloorFigures(t *testing.T) {
	f := floorFigures{mqtt: 200 * time.Microsecond, spawn: 800 * time.Microsecond, commit: 25 * time.Microsecond}
	if got, want := f.process(), 1050*time.Microsecond; got != want {
		t.Errorf("process floor %s, want %s", got, want)
	}
	if got, want := f.builtin(), 250*time.Microsecond; got != want {
		t.Errorf("built-in floor %s, want %s", got, want)
	}
	rt := func(ms ...float64) *roundTrips {
		r := &roundTrips{}
		for _, m := range ms {
			r.lat = append(r.lat, time.Duration(m*float64(time.Millisecond)))
		}
		return r
	}
	var lines []string
	say := func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }
	f.print(say, rt(1.0, 2.1, 9.0), rt(0.5, 0.5, 3.0))
	if len(lines) != 3 {
		t.Fatalf("printed %q, want the floor and two ratios", lines)
	}
	if !strings.Contains(lines[1], "2.1ms = 2.00x its floor 1.05ms") {
		t.Errorf("process line %q, want 2.1ms = 2.00x its floor 1.05ms", lines[1])
	}
	if !strings.Contains(lines[2], "500µs = 2.00x its floor 250µs") {
		t.Errorf("built-in line %q, want 500µs = 2.00x its floor 250µs", lines[2])
	}
	lines = nil
	f.print(say, nil, rt(1.0))
	if len(lines) != 2 || !strings.Contains(lines[1], "built-in tool") {
		t.Errorf("with the built-in tool alone printed %q", lines)
	}
}

// floorSpawn runs the tool the way a tool is run and fails when it does not
// run or says nothing; floorCommit commits one row per transaction.
func TestFloorSpawnAndCommit(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if d, err := floorSpawn(script("ok", "cat >/dev/null; echo ok"), 5); err != nil || d <= 0 {
		t.Errorf("floorSpawn of a working tool = %s, %v", d, err)
	}
	if _, err := floorSpawn(script("fails", "exit 3"), 5); err == nil {
		t.Error("floorSpawn of a failing tool: no error")
	}
	if _, err := floorSpawn(script("mute", "true"), 5); err == nil || !strings.Contains(err.Error(), "no output") {
		t.Errorf("floorSpawn of a tool that prints nothing = %v, want no output", err)
	}

	for _, durability := range []string{"normal", "full"} {
		path := filepath.Join(dir, durability+".db")
		d, err := floorCommit(path, durability, 7)
		if err != nil || d <= 0 {
			t.Fatalf("floorCommit(%s) = %s, %v", durability, d, err)
		}
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		var rows int
		var mode string
		err = db.QueryRow("SELECT count(*) FROM t").Scan(&rows)
		if err == nil {
			err = db.QueryRow("PRAGMA journal_mode").Scan(&mode)
		}
		db.Close()
		if err != nil || rows != 7+floorWarmup || mode != "wal" {
			t.Errorf("%s: %d rows in %q mode (%v), want %d in wal", durability, rows, mode, err, 7+floorWarmup)
		}
	}
}

// The MQTT floor goes through a real broker to the echo and back; the echo
// answers every ping and says when it is ready.
func TestFloorMQTT(t *testing.T) {
	br, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true, ReloadInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	defer wg.Wait()
	startEcho := func() (func(), error) {
		ectx, cancel := context.WithCancel(ctx)
		r, w := io.Pipe()
		wg.Go(func() {
			if err := benchEcho(ectx, br.URL(), w); err != nil {
				t.Errorf("echo: %v", err)
			}
			w.Close()
		})
		line := make([]byte, 64)
		n, err := r.Read(line)                   // the ready line: subscribed
		wg.Go(func() { io.Copy(io.Discard, r) }) // ends when the echo closes w
		if err != nil || !bytes.Contains(line[:n], []byte("ready")) {
			cancel()
			t.Fatalf("echo said %q, %v before it was ready", line[:n], err)
		}
		return cancel, nil
	}
	d, err := floorMQTT(ctx, br.URL(), startEcho, 50)
	if err != nil || d <= 0 {
		t.Fatalf("floorMQTT = %s, %v", d, err)
	}
}
