package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver of the commit floor

	"github.com/evoclaw/evoclaw/edge/mqttc"
)

// The floor of a round trip is what this machine cannot do faster, measured
// by the bench in the same run as the round trips, so that each round trip
// is reported as a ratio of figures that saw the same load: an MQTT QoS 1
// round trip between two processes through the node's own broker, one
// fork, exec and wait of the process tool the round trips run, and one
// one-row SQLite commit with the audit's durability (one durable record per
// side is the least that "audited on both sides" allows).

// Topics of the MQTT floor: outside evoclaw/, so no agent or node sees them.
const (
	floorPing = "bench/floor/ping"
	floorPong = "bench/floor/pong"
)

// floorWarmup round trips, spawns and commits come before those measured.
const floorWarmup = 20

// floorFigures are the medians the floor measured.
type floorFigures struct {
	mqtt, spawn, commit time.Duration
}

// process is the floor of a process tool's round trip: the MQTT round
// trip, the tool's start and end, a commit on each side.
func (f floorFigures) process() time.Duration { return f.mqtt + f.spawn + 2*f.commit }

// builtin is the floor of a round trip to a tool with no process.
func (f floorFigures) builtin() time.Duration { return f.mqtt + 2*f.commit }

// print says the floor and each measured round trip's ratio to its floor.
func (f floorFigures) print(say func(string, ...any), process, builtin *roundTrips) {
	say("floor (this machine, this run): MQTT QoS 1 round trip across processes through the node's broker %s, fork/exec/wait of the tool %s, one-row commit %s",
		f.mqtt.Round(time.Microsecond), f.spawn.Round(time.Microsecond), f.commit.Round(time.Microsecond))
	if process != nil {
		say("  process tool:  %s = %.2fx its floor %s (MQTT + spawn + 2 commits)", process.median().Round(time.Microsecond),
			ratio(process.median(), f.process()), f.process().Round(time.Microsecond))
	}
	if builtin != nil {
		say("  built-in tool: %s = %.2fx its floor %s (MQTT + 2 commits)", builtin.median().Round(time.Microsecond),
			ratio(builtin.median(), f.builtin()), f.builtin().Round(time.Microsecond))
	}
}

func ratio(d, floor time.Duration) float64 {
	if floor <= 0 {
		return 0
	}
	return float64(d) / float64(floor)
}

// median is the middle of the sorted latencies.
func (r roundTrips) median() time.Duration { return r.lat[(len(r.lat)-1)/2] }

// medianOf sorts ds and returns its middle.
func medianOf(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[(len(ds)-1)/2]
}

// measureFloor measures the floor with n of each: the MQTT round trip
// through brokerURL with an echo process started by startEcho, the tool at
// toolPath, and commits in a database under dir with auditSync's
// durability.
func measureFloor(ctx context.Context, brokerURL string, startEcho func() (stop func(), err error), toolPath, dir, auditSync string, n int) (floorFigures, error) {
	var f floorFigures
	var err error
	if f.mqtt, err = floorMQTT(ctx, brokerURL, startEcho, n); err != nil {
		return f, fmt.Errorf("mqtt floor: %w", err)
	}
	if f.spawn, err = floorSpawn(toolPath, n); err != nil {
		return f, fmt.Errorf("spawn floor: %w", err)
	}
	if f.commit, err = floorCommit(filepath.Join(dir, "floor.db"), auditSync, n); err != nil {
		return f, fmt.Errorf("commit floor: %w", err)
	}
	return f, nil
}

// startBenchEcho starts the echo of the MQTT floor as a child process (this
// binary, `bench --echo URL`) and returns what stops it.
func startBenchEcho(ctx context.Context, brokerURL string) (func(), error) {
	p, err := startReady(ctx, "bench-echo", []string{"bench", "--echo", brokerURL})
	if err != nil {
		return nil, err
	}
	return func() { _ = p.Stop() }, nil
}

// floorMQTT measures n QoS 1 round trips from this process through the
// broker at brokerURL to the echo and back: a publish on floorPing until
// the echo's message on floorPong arrives. It returns the median.
func floorMQTT(ctx context.Context, brokerURL string, startEcho func() (stop func(), err error), n int) (time.Duration, error) {
	stop, err := startEcho()
	if err != nil {
		return 0, err
	}
	defer stop()
	c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: brokerURL, ClientID: fmt.Sprintf("evoclaw-bench-floor-%d", os.Getpid()),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	got := make(chan struct{}, 1)
	if err := c.Subscribe(floorPong, 1, func(mqttc.Message) {
		select {
		case got <- struct{}{}:
		default:
		}
	}); err != nil {
		return 0, err
	}
	payload := bytes.Repeat([]byte("x"), 200)
	lat := make([]time.Duration, 0, n)
	for i := range n + floorWarmup {
		began := time.Now()
		if err := c.Publish(ctx, mqttc.Message{Topic: floorPing, Payload: payload, QoS: 1}); err != nil {
			return 0, err
		}
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			return 0, errors.New("no echo within 5s")
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if i >= floorWarmup {
			lat = append(lat, time.Since(began))
		}
	}
	return medianOf(lat), nil
}

// benchEcho is the echo process of the MQTT floor: every message on
// floorPing goes back on floorPong at QoS 1, until ctx ends. It prints
// "ready" once subscribed.
func benchEcho(ctx context.Context, brokerURL string, stdout io.Writer) error {
	c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: brokerURL, ClientID: fmt.Sprintf("evoclaw-bench-echo-%d", os.Getpid()),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer c.Close()
	// The handler runs on the client's routing goroutine, which must not
	// wait for an acknowledgement: one worker publishes the answers.
	work := make(chan []byte, 64)
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() {
		for {
			select {
			case <-wctx.Done():
				return
			case p := <-work:
				_ = c.Publish(wctx, mqttc.Message{Topic: floorPong, Payload: p, QoS: 1}) // a lost echo shows as a timeout
			}
		}
	})
	if err := c.Subscribe(floorPing, 1, func(m mqttc.Message) {
		select {
		case work <- m.Payload:
		default: // more pings than the bench sends at once: dropped
		}
	}); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "bench echo ready")
	<-ctx.Done()
	return nil
}

// floorSpawn forks, execs and waits for the tool at path n times, the way
// a tool is run (its own process group, "{}" on stdin, stdout read), and
// returns the median.
func floorSpawn(path string, n int) (time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for i := range n + floorWarmup {
		began := time.Now()
		cmd := exec.Command(path)
		cmd.Stdin = strings.NewReader("{}")
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("run %s: %w", path, err)
		}
		if out.Len() == 0 {
			return 0, fmt.Errorf("run %s: no output", path)
		}
		if i >= floorWarmup {
			lat = append(lat, time.Since(began))
		}
	}
	return medianOf(lat), nil
}

// floorCommit commits n transactions of one row each (about an audit
// row's size) into a fresh WAL database at path with auditSync's
// durability, and returns the median.
func floorCommit(path, auditSync string, n int) (time.Duration, error) {
	mode := "NORMAL"
	if auditSync == "full" {
		mode = "FULL"
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous("+mode+")&_txlock=immediate")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE t(id INTEGER PRIMARY KEY, ts INTEGER, agent TEXT, tool TEXT, args TEXT, result TEXT, hash BLOB)"); err != nil {
		return 0, err
	}
	row, hash := strings.Repeat("r", 200), bytes.Repeat([]byte{7}, 32)
	lat := make([]time.Duration, 0, n)
	for i := range n + floorWarmup {
		began := time.Now()
		tx, err := db.Begin()
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec("INSERT INTO t(ts, agent, tool, args, result, hash) VALUES(?, ?, ?, ?, ?, ?)", i, "bench-edge", "noop", "{}", row, hash); err != nil {
			_ = tx.Rollback()
			return 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
		if i >= floorWarmup {
			lat = append(lat, time.Since(began))
		}
	}
	return medianOf(lat), nil
}
