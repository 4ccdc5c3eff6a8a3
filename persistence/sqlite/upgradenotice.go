package sqlite

import (
	"log/slog"
	"sync"
	"time"
)

// upgradeNoticeEvery is how often a schema upgrade that is still running
// says so (a variable so that tests need not wait for it).
var upgradeNoticeEvery = 15 * time.Second

// Log keys of the upgrade's lines.
const (
	logKeyFrom    = "from_version"
	logKeyTo      = "to_version"
	logKeyElapsed = "elapsed"
)

// upgradeNotice tells, in the log, that the schema of an existing database
// is being upgraded, while it runs and when it is done. The upgrade is one
// transaction that reads every record (the summaries of v9 are built from
// them): 5 to 11 seconds for a million records on a 2-core server, longer
// on a Pi's SD card, with nothing else in the log meanwhile. Without these
// lines a node doing it looked hung. Its goroutine is stopped by stop,
// which waits for it.
type upgradeNotice struct {
	log      *slog.Logger
	from, to int
	began    time.Time
	quit     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

// startUpgradeNotice logs the start of an upgrade from version from to
// version to and says every upgradeNoticeEvery that it is still running.
func startUpgradeNotice(log *slog.Logger, from, to int) *upgradeNotice {
	n := &upgradeNotice{log: log, from: from, to: to, began: time.Now(), quit: make(chan struct{})}
	log.Info("upgrading the audit database's schema: one transaction over every record, which takes a while on a large database; stopped, it changes nothing and the next start does it again",
		logKeyFrom, from, logKeyTo, to)
	n.wg.Add(1)
	go n.run()
	return n
}

func (n *upgradeNotice) run() {
	defer n.wg.Done()
	t := time.NewTicker(upgradeNoticeEvery)
	defer t.Stop()
	for {
		select {
		case <-n.quit:
			return
		case <-t.C:
			n.log.Info("still upgrading the audit database's schema", logKeyFrom, n.from, logKeyTo, n.to,
				logKeyElapsed, time.Since(n.began).Round(time.Second).String())
		}
	}
}

// stop ends the notices and waits for them; it may be called more than
// once.
func (n *upgradeNotice) stop() {
	n.once.Do(func() { close(n.quit) })
	n.wg.Wait()
}

// done stops the notices and logs that the upgrade committed.
func (n *upgradeNotice) done() {
	n.stop()
	n.log.Info("audit database schema upgraded", logKeyFrom, n.from, logKeyTo, n.to,
		logKeyElapsed, time.Since(n.began).Round(time.Millisecond).String())
}
