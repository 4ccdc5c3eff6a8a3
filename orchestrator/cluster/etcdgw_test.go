//go:build !nocluster

package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// seen records what a membership publishes.
type seen struct {
	mu  sync.Mutex
	ids []string
	all [][]string // every set published
}

func (s *seen) publish(nodes []etcdNode) {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	s.mu.Lock()
	s.ids, s.all = ids, append(s.all, ids)
	s.mu.Unlock()
}

func (s *seen) now() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// waitFor waits until s has published exactly ids (sorted).
func (s *seen) waitFor(t *testing.T, within time.Duration, who string, ids ...string) {
	t.Helper()
	testenv.Eventually(t, within, func() bool {
		time.Sleep(20 * time.Millisecond)
		return slices.Equal(s.now(), ids)
	}, fmt.Sprintf("%s sees members %v (sees %v)", who, ids, s.now()))
}

func testNode(id string) etcdNode {
	return etcdNode{ID: id, Name: id, Host: "127.0.0.1", Address: "127.0.0.1", Port: 9000, Kinds: []string{"agent"}, Alive: true}
}

// member starts a membership of id in cluster, shut down (leaving) when
// the test ends.
func member(t *testing.T, endpoints []string, cluster, id string) (*etcdMembership, *seen) {
	t.Helper()
	return memberTLS(t, endpoints, nil, cluster, id)
}

// memberTLS is member reaching https endpoints with tlsConf.
func memberTLS(t *testing.T, endpoints []string, tlsConf *tls.Config, cluster, id string) (*etcdMembership, *seen) {
	t.Helper()
	s := &seen{}
	log := (&testenv.Buffer{}).Logger(-4)
	m := newEtcdMembership(endpoints, tlsConf, etcdBaseKey, cluster, testNode(id), s.publish, log)
	if err := m.start(); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	t.Cleanup(func() { _ = m.shutdown(true) })
	return m, s
}

// keyIn reads key from etcd directly: its value, and whether it is there.
func keyIn(t *testing.T, endpoint, key string) (string, bool) {
	t.Helper()
	return keyInTLS(t, endpoint, nil, key)
}

// keyInTLS is keyIn reaching an https endpoint with tlsConf.
func keyInTLS(t *testing.T, endpoint string, tlsConf *tls.Config, key string) (string, bool) {
	t.Helper()
	probe := newEtcdMembership([]string{endpoint}, tlsConf, etcdBaseKey, "probe", testNode("probe"), func([]etcdNode) {}, nil)
	defer probe.shutdown(false)
	var r struct {
		KVs []etcdKV `json:"kvs"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := probe.call(ctx, "/v3/kv/range", map[string]any{"key": []byte(key)}, &r); err != nil {
		t.Fatalf("range %s: %v", key, err)
	}
	if len(r.KVs) == 0 {
		return "", false
	}
	return string(r.KVs[0].Value), true
}

// TestEtcdMembership runs members of two clusters against a real etcd:
// joins, a graceful leave (the key is gone when shutdown returns), a
// member that dies (it leaves when its lease ends), an etcd restart (the
// watch starts over and sees who joins after it), and an endpoint that
// does not answer ahead of the one that does.
func TestEtcdMembership(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	dead := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	eps := []string{dead, etcd.Addr()}

	a, sa := member(t, eps, "lab", "lab@a.1")
	sa.waitFor(t, 10*time.Second, "a", "lab@a.1")
	_, sb := member(t, eps, "lab", "lab@b.1")
	sa.waitFor(t, 10*time.Second, "a", "lab@a.1", "lab@b.1")
	sb.waitFor(t, 10*time.Second, "b", "lab@a.1", "lab@b.1")

	// A cluster whose name starts with another's is another cluster.
	_, sc := member(t, eps, "lab2", "lab2@c.1")
	sc.waitFor(t, 10*time.Second, "c", "lab2@c.1")
	d, _ := member(t, eps, "lab", "lab@d.1")
	sa.waitFor(t, 10*time.Second, "a", "lab@a.1", "lab@b.1", "lab@d.1")
	if got := sc.now(); !slices.Equal(got, []string{"lab2@c.1"}) {
		t.Errorf("c (cluster lab2) sees %v, want only itself", got)
	}

	// The value is protoactor's etcd provider's member JSON.
	v, ok := keyIn(t, etcd.Addr(), "/evoclaw/lab/lab@a.1")
	var n map[string]any
	if !ok || json.Unmarshal([]byte(v), &n) != nil || n["id"] != "lab@a.1" || n["host"] != "127.0.0.1" || n["port"] != float64(9000) || n["alive"] != true {
		t.Errorf("a's key holds %q (there: %v), want the member's JSON", v, ok)
	}

	// d leaves gracefully: its key is gone once shutdown returns.
	if err := d.shutdown(true); err != nil {
		t.Fatalf("d leaves: %v", err)
	}
	if v, ok := keyIn(t, etcd.Addr(), "/evoclaw/lab/lab@d.1"); ok {
		t.Fatalf("d's key is still there after it left: %q", v)
	}
	sa.waitFor(t, 10*time.Second, "a", "lab@a.1", "lab@b.1")

	// e dies: its keep-alive stops, its key stays until the lease ends.
	e, _ := member(t, eps, "lab", "lab@e.1")
	sa.waitFor(t, 10*time.Second, "a", "lab@a.1", "lab@b.1", "lab@e.1")
	_ = e.shutdown(false)
	if _, ok := keyIn(t, etcd.Addr(), "/evoclaw/lab/lab@e.1"); !ok {
		t.Fatal("e's key is gone at once, not at the end of its lease")
	}
	sa.waitFor(t, 3*memberTTL+5*time.Second, "a", "lab@a.1", "lab@b.1")

	// etcd restarts: the watches start over and see who joins after.
	etcd.Restart()
	_, sf := member(t, []string{etcd.Addr()}, "lab", "lab@f.1")
	sf.waitFor(t, 20*time.Second, "f", "lab@a.1", "lab@b.1", "lab@f.1")
	sa.waitFor(t, 20*time.Second, "a", "lab@a.1", "lab@b.1", "lab@f.1")
	sb.waitFor(t, 20*time.Second, "b", "lab@a.1", "lab@b.1", "lab@f.1")

	// Leaving while etcd is gone ends, with an error, within the TTL.
	etcd.Kill()
	done := make(chan error, 1)
	go func() { done <- a.shutdown(true) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("leaving with etcd gone reported no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("leaving with etcd gone still waits after 30 s")
	}
}

// TestEtcdLeaseLost: a member whose lease etcd dropped (it expired while
// etcd was out of reach) registers again on a new lease.
func TestEtcdLeaseLost(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	m, _ := member(t, []string{etcd.Addr()}, "lab", "lab@a.1")
	m.mu.Lock()
	old := m.lease
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.call(ctx, "/v3/lease/revoke", map[string]any{"ID": strconv.FormatInt(old, 10)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := keyIn(t, etcd.Addr(), "/evoclaw/lab/lab@a.1"); ok {
		t.Fatal("the key outlived its revoked lease")
	}
	// The member puts its key, then takes the new lease as its own: wait
	// for both (reading the lease as soon as the key was back raced the
	// second step).
	var now int64
	testenv.Eventually(t, 10*time.Second, func() bool {
		time.Sleep(50 * time.Millisecond)
		m.mu.Lock()
		now = m.lease
		m.mu.Unlock()
		_, ok := keyIn(t, etcd.Addr(), "/evoclaw/lab/lab@a.1")
		return ok && now != old
	}, "the member's key back on a new lease")
	if now == 0 {
		t.Errorf("lease %d after losing %d, want a new one", now, old)
	}
}

// fakeEtcd answers the gateway's calls a membership makes, with one
// member listed, and a watch stream from the test.
type fakeEtcd struct {
	listed  []etcdKV
	watches chan []string // each watch request streams one of these, then ends
	ranges  int
	mu      sync.Mutex
}

func (f *fakeEtcd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Read the request whole: only then does the server notice that the
	// client went away and end a watch's context.
	_, _ = io.Copy(io.Discard, r.Body)
	switch r.URL.Path {
	case "/v3/lease/grant":
		fmt.Fprint(w, `{"header":{"revision":"7"},"ID":"42","TTL":"3"}`)
	case "/v3/kv/put", "/v3/kv/deleterange", "/v3/lease/revoke":
		fmt.Fprint(w, `{"header":{"revision":"8"}}`)
	case "/v3/lease/keepalive":
		fmt.Fprint(w, `{"result":{"ID":"42","TTL":"3"}}`)
	case "/v3/kv/range":
		f.mu.Lock()
		f.ranges++
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"header": map[string]string{"revision": "8"}, "kvs": f.listed})
	case "/v3/watch":
		select {
		case lines := <-f.watches:
			for _, l := range lines {
				fmt.Fprintln(w, l)
				w.(http.Flusher).Flush()
			}
		case <-r.Context().Done():
		}
	default:
		http.NotFound(w, r)
	}
}

func kvJSON(key string, n etcdNode, del bool) string {
	v, _ := json.Marshal(n)
	ev := map[string]any{"kv": map[string]any{"key": []byte(key), "value": v}}
	if del {
		ev["type"] = "DELETE"
		delete(ev["kv"].(map[string]any), "value")
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// TestEtcdWatchBadInput: what etcd's watch stream sends that is not a
// member change (garbage, a line past the bound, a cancellation, an
// error, keys and values that are not members') never adds a member or
// takes one away; a stream that breaks or ends is followed by a new list.
func TestEtcdWatchBadInput(t *testing.T) {
	bn, cn := testNode("lab@b.1"), testNode("lab@c.1")
	bkv := etcdKV{Key: []byte("/evoclaw/lab/lab@b.1"), Value: mustJSON(bn)}
	ckv := etcdKV{Key: []byte("/evoclaw/lab/lab@c.1"), Value: mustJSON(cn)}
	f := &fakeEtcd{listed: []etcdKV{bkv}, watches: make(chan []string)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the member's shutdown (cleanups run last first)
	_, s := member(t, []string{srv.URL}, "lab", "lab@a.1")
	s.waitFor(t, 5*time.Second, "a", "lab@a.1", "lab@b.1")

	events := func(evs ...string) string {
		return `{"result":{"header":{"revision":"9"},"events":[` + strings.Join(evs, ",") + `]}}`
	}
	abc := []string{"lab@a.1", "lab@b.1", "lab@c.1"}
	cases := []struct {
		name   string
		listed []etcdKV // what etcd holds after the case
		lines  []string
		want   []string
	}{
		{"a member joins", []etcdKV{bkv, ckv}, []string{`{"result":{"created":true}}`, events(kvJSON("/evoclaw/lab/lab@c.1", cn, false))}, abc},
		{"not JSON", nil, []string{"{{{not json"}, abc},
		{"keys and values that are not members'", nil, []string{events(
			kvJSON("/evoclaw/lab2/lab2@x.1", testNode("lab2@x.1"), false),
			kvJSON("/evoclaw/lab/x/y", testNode("y"), false),
			`{"kv":{"key":"`+b64("/evoclaw/lab/lab@z.1")+`","value":"`+b64("not a member")+`"}}`,
			// Another member's value under a key of its own, and members
			// with no address to reach them at.
			kvJSON("/evoclaw/lab/lab@y.1", testNode("lab@b.1"), false),
			kvJSON("/evoclaw/lab/lab@p.1", etcdNode{ID: "lab@p.1", Host: "127.0.0.1", Port: 0, Alive: true}, false),
			kvJSON("/evoclaw/lab/lab@q.1", etcdNode{ID: "lab@q.1", Host: "127.0.0.1", Port: 70000, Alive: true}, false),
			kvJSON("/evoclaw/lab/lab@r.1", etcdNode{ID: "lab@r.1", Port: 9000, Alive: true}, false),
		)}, abc},
		{"canceled by a compaction", nil, []string{`{"result":{"canceled":true,"compact_revision":"3","cancel_reason":"compacted"}}`}, abc},
		{"a line past the bound", nil, []string{`{"result":{"events":[` + strings.Repeat(" ", maxEtcdMessage) + `]}}`}, abc},
		{"an error", nil, []string{`{"error":"etcdserver: no leader","code":14}`}, abc},
		{"a member leaves", []etcdKV{ckv}, []string{events(kvJSON("/evoclaw/lab/lab@b.1", etcdNode{}, true))}, []string{"lab@a.1", "lab@c.1"}},
	}
	for _, tc := range cases {
		f.mu.Lock()
		if tc.listed != nil {
			f.listed = tc.listed
		}
		before := f.ranges
		f.mu.Unlock()
		select {
		case f.watches <- tc.lines:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the membership does not watch again", tc.name)
		}
		testenv.Eventually(t, 10*time.Second, func() bool {
			time.Sleep(10 * time.Millisecond)
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.ranges > before
		}, tc.name+": the members are listed again after the stream")
		s.waitFor(t, 10*time.Second, "a, "+tc.name, tc.want...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, set := range s.all {
		for _, id := range set {
			if !slices.Contains([]string{"lab@a.1", "lab@b.1", "lab@c.1"}, id) {
				t.Errorf("published set %d holds %q: %v", i, id, set)
			}
		}
		if !slices.Contains(set, "lab@a.1") {
			t.Errorf("published set %d lacks the member itself: %v", i, set)
		}
	}
}

func b64(s string) string {
	b, _ := json.Marshal([]byte(s))
	return strings.Trim(string(b), `"`)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestReadLine: lines up to the bound are read whole, across the
// reader's buffer; a longer one is an error, not a larger buffer.
func TestReadLine(t *testing.T) {
	for _, tc := range []struct {
		in      string
		max     int
		want    []string
		wantErr string // "" means the input ends with io.EOF
	}{
		{"a\nbb\n", 10, []string{"a\n", "bb\n"}, ""},
		{"a\nlast", 10, []string{"a\n", "last"}, ""},
		{strings.Repeat("x", 40) + "\n", 64, []string{strings.Repeat("x", 40) + "\n"}, ""},
		{"ok\n" + strings.Repeat("x", 65) + "\n", 64, []string{"ok\n"}, "longer than 64 bytes"},
	} {
		r := bufio.NewReaderSize(strings.NewReader(tc.in), 16)
		var got []string
		var err error
		for {
			var l []byte
			if l, err = readLine(r, tc.max); err != nil {
				break
			}
			got = append(got, string(l))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("readLine(%.20q, %d) read %q, want %q", tc.in, tc.max, got, tc.want)
		}
		switch {
		case tc.wantErr == "" && err != io.EOF:
			t.Errorf("readLine(%.20q, %d) ended with %v, want io.EOF", tc.in, tc.max, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("readLine(%.20q, %d) ended with %v, want %q", tc.in, tc.max, err, tc.wantErr)
		}
	}
}

// FuzzWatchMessage: any line of the watch stream either fails to parse or
// changes the members so that this member stays among them, every id is
// a member key's, and there are no more than maxMembers.
func FuzzWatchMessage(f *testing.F) {
	f.Add([]byte(`{"result":{"events":[` + kvJSON("/evoclaw/lab/lab@c.1", testNode("lab@c.1"), false) + `]}}`))
	f.Add([]byte(`{"result":{"events":[` + kvJSON("/evoclaw/lab/lab@a.1", etcdNode{}, true) + `]}}`))
	f.Add([]byte(`{"result":{"canceled":true,"compact_revision":"3"}}`))
	f.Add([]byte(`{"error":"x"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var got []etcdNode
		m := newEtcdMembership([]string{"127.0.0.1:1"}, nil, etcdBaseKey, "lab", testNode("lab@a.1"), func(n []etcdNode) { got = n }, nil)
		w, err := parseWatchMessage(line)
		if err != nil {
			return
		}
		for _, ev := range w.Result.Events {
			m.apply(ev)
		}
		m.publishMembers()
		if len(got) > maxMembers+1 {
			t.Fatalf("%d members", len(got))
		}
		if !slices.ContainsFunc(got, func(n etcdNode) bool { return n.ID == "lab@a.1" }) {
			t.Fatalf("self missing from %v", got)
		}
		for id, n := range m.members {
			if id == "" || strings.Contains(id, "/") || n.ID != id {
				t.Fatalf("member id %q holds %+v", id, n)
			}
			if h, p := n.hostPort(); h == "" || p <= 0 || p > 65535 {
				t.Fatalf("member %q without an address: %+v", id, n)
			}
		}
	})
}

// TestEtcdStartBounded: an etcd that accepts connections and never
// answers fails the start within the call timeout instead of hanging it.
func TestEtcdStartBounded(t *testing.T) {
	for _, hangOn := range []string{"/v3/lease/grant", "/v3/kv/range"} {
		t.Run(strings.TrimPrefix(hangOn, "/v3/"), func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if r.URL.Path == hangOn {
					select {
					case <-release:
					case <-r.Context().Done():
					}
					return
				}
				(&fakeEtcd{}).ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) })
			m := newEtcdMembership([]string{srv.URL}, nil, etcdBaseKey, "lab", testNode("lab@a.1"), func([]etcdNode) {}, nil)
			m.callTimeout = 300 * time.Millisecond
			done := make(chan error, 1)
			go func() { done <- m.start() }()
			select {
			case err := <-done:
				if err == nil {
					_ = m.shutdown(false)
					t.Fatal("start succeeded against an etcd that does not answer")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("start still waits after 10 s for an etcd that does not answer")
			}
			_ = m.shutdown(false)
		})
	}
}

// TestEtcdNeverThroughAProxy: a proxy the environment names for other
// traffic does not carry the membership (loopback is never proxied, so
// this looks at the transport itself).
func TestEtcdNeverThroughAProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	m := newEtcdMembership([]string{"10.0.0.1:2379"}, nil, etcdBaseKey, "lab", testNode("lab@a.1"), func([]etcdNode) {}, nil)
	tr, ok := m.hc.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T", m.hc.Transport)
	}
	req, _ := http.NewRequest(http.MethodPost, m.endpoints[0]+"/v3/kv/range", nil)
	if tr.Proxy != nil {
		if u, err := tr.Proxy(req); u != nil || err != nil {
			t.Fatalf("etcd requests go through %v (%v)", u, err)
		}
	}
	if p := etcdTransport(nil).Proxy; p != nil {
		if u, _ := p(req); u != nil {
			t.Fatalf("the probe's transport goes through %v", u)
		}
	}
}
