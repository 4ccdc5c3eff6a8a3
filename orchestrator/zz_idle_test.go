package orchestrator_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

func init() { runtime.MemProfileRate = 1 }

func TestZZIdle(t *testing.T) {
	dir := t.TempDir()
	node, err := orchestrator.Start(context.Background(), orchestrator.Config{DataDir: filepath.Join(dir, "data"),
		Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0"}, HTTP: orchestrator.HTTPConf{Listen: "127.0.0.1:0"}}, orchestrator.Options{Provider: scripted.Offline{}})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	time.Sleep(3 * time.Second)
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f, _ := os.Create("/tmp/heap0.prof")
	pprof.Lookup("allocs").WriteTo(f, 0)
	f.Close()
	pprof.StartCPUProfile(nil)
	time.Sleep(20 * time.Second)
	runtime.ReadMemStats(&b)
	t.Logf("live heap %d kB, alloc while idle %d kB in 20s, mallocs %d, goroutines %d", a.HeapAlloc/1024, (b.TotalAlloc-a.TotalAlloc)/1024, b.Mallocs-a.Mallocs, runtime.NumGoroutine())
	f, _ = os.Create("/tmp/heap1.prof")
	pprof.Lookup("allocs").WriteTo(f, 0)
	f.Close()
}
