//go:build linux

package attack

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
)

// auditSQLBombs sends statements that need gigabytes of memory or disk to
// a real evoclaw serve's POST /v1/audit/sql: each must be refused with 400
// and the node's private memory must stay where it was, also with several
// sent at once.
func auditSQLBombs(t *testing.T, b *board) {
	c := b.class("audit SQL memory bombs", true)
	dir := t.TempDir()
	conf := filepath.Join(dir, "evoclaw.toml")
	if err := os.WriteFile(conf, []byte("[broker]\nlisten = \"127.0.0.1:0\"\n[http]\nlisten = \"127.0.0.1:0\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(evoclawtest.Binary(t), "serve", "--config", conf, "--data-dir", data)
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	api := make(chan string, 1)
	ready := regexp.MustCompile(`api (http://\S+)`)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				api <- m[1]
			}
		}
	}()
	var base string
	select {
	case base = <-api:
	case <-time.After(evoclawtest.ReadyTimeout):
		t.Fatalf("serve not ready; stderr:\n%s", stderr.String())
	}
	tok, err := os.ReadFile(filepath.Join(data, orchestrator.HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	anon := func() int64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		var kb int64
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
				fmt.Sscan(v, &kb)
			}
		}
		return kb
	}
	post := func(sql string) int {
		body, _ := json.Marshal(map[string]string{"sql": sql})
		req, err := http.NewRequest("POST", base+"/v1/audit/sql", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	before := anon()
	wide := "SELECT " + strings.TrimSuffix(strings.Repeat("zeroblob(16000000), ", 200), ", ")
	bombs := []string{
		"SELECT zeroblob(1000000000)",
		"SELECT randomblob(900000000)",
		"SELECT printf('%.*c', 900000000, 'x')",
		"SELECT group_concat(zeroblob(10000000)) FROM (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n LIMIT 300) SELECT x FROM n)",
		wide,
		// A sort of 300 MB: in files it would fill the data directory's
		// disk; in the child's memory it meets the bound.
		"SELECT count(*) FROM (SELECT x FROM (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n LIMIT 1000000) SELECT printf('%.*c', 300, 'x') || x AS x FROM n) ORDER BY x)",
	}
	for _, q := range bombs {
		code := post(q)
		c.try(code == http.StatusBadRequest, fmt.Sprintf("%.40s... answered %d", q, code))
	}
	// Several at once: two run, the rest wait; none reaches the node.
	var wg sync.WaitGroup
	codes := make([]int, 6)
	for i := range codes {
		wg.Go(func() { codes[i] = post(wide) })
	}
	wg.Wait()
	for _, code := range codes {
		c.try(code == http.StatusBadRequest || code == http.StatusTooManyRequests, fmt.Sprintf("concurrent row of 3 GB answered %d", code))
	}
	after := anon()
	c.try(after-before < 32<<10, fmt.Sprintf("node's private memory %d -> %d kB", before, after))
	c.try(post("SELECT count(*) FROM tool_calls") == http.StatusOK, "the next statement")
}
