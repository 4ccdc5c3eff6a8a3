//go:build !nocluster

package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The cluster's membership lives in etcd: each member keeps one key under
// /evoclaw/<cluster>/ alive on a short lease, and watches the prefix. It
// speaks etcd's JSON gateway (the v3 API as JSON over HTTP, or HTTPS with
// the node's certificate of [cluster.tls], served on the client port by
// etcd 3.4 and later) with net/http, instead of linking
// etcd's gRPC client: that client and its generated protobuf code were
// most of a node's package initialisation, clustered or not (see
// docs/PERFORMANCE.md, "Where the ready time goes"). Keys and values are
// the ones protoactor-go's etcd provider wrote, so nodes of either kind
// see each other.

const (
	// memberTTL is a member key's lease: a node that dies leaves within
	// it. The keep-alive is sent every third of it.
	memberTTL = 3 * time.Second
	// maxMembers bounds the members one node keeps from etcd.
	maxMembers = 1024
	// maxEtcdMessage bounds one answer of etcd read into memory (a range
	// of every member, or one watch message).
	maxEtcdMessage = 4 << 20
	// watchBackoffMax bounds the wait before the watch starts over.
	watchBackoffMax = 2 * time.Second
)

// etcdNode is a member's value in etcd, as protoactor-go's etcd provider
// writes it.
type etcdNode struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Host    string   `json:"host"`
	Address string   `json:"address"`
	Port    int      `json:"port"`
	Kinds   []string `json:"kinds"`
	Alive   bool     `json:"alive"`
}

// hostPort is where the other members reach n.
func (n etcdNode) hostPort() (string, int) {
	if n.Host != "" {
		return n.Host, n.Port
	}
	return n.Address, n.Port
}

// etcdMembership keeps this member's key alive in etcd and tells publish
// every set of members it sees (itself included), from one goroutine.
type etcdMembership struct {
	endpoints []string // base URLs, http(s)://host:port
	prefix    string   // baseKey/cluster/
	ttl       time.Duration
	// callTimeout bounds each call made while starting.
	callTimeout time.Duration
	hc          *http.Client
	log         *slog.Logger
	publish     func([]etcdNode)

	self etcdNode
	key  string

	mu    sync.Mutex
	ep    int   // the endpoint that answered last
	lease int64 // this member's lease, 0 before the first grant

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	resync chan struct{} // asks the watch to list again (capacity 1)
	stop   sync.Once

	members map[string]etcdNode // the watch goroutine's alone once started
}

// newEtcdMembership prepares the membership of self in cluster under
// baseKey, reaching https endpoints with tlsConf (etcdTransport); nothing
// is dialed until start.
func newEtcdMembership(endpoints []string, tlsConf *tls.Config, baseKey, cluster string, self etcdNode, publish func([]etcdNode), log *slog.Logger) *etcdMembership {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	eps := make([]string, len(endpoints))
	for i, e := range endpoints {
		eps[i] = etcdBaseURL(e)
	}
	tr := etcdTransport(tlsConf)
	tr.MaxIdleConnsPerHost = 4
	ctx, cancel := context.WithCancel(context.Background())
	return &etcdMembership{
		endpoints: eps,
		// The trailing slash keeps cluster "lab" from seeing the
		// members of cluster "lab2".
		prefix:      baseKey + "/" + cluster + "/",
		ttl:         memberTTL,
		callTimeout: DefaultDialTimeout,
		hc:          &http.Client{Transport: tr},
		log:         log,
		publish:     publish,
		self:        self,
		key:         baseKey + "/" + cluster + "/" + self.ID,
		ctx:         ctx,
		cancel:      cancel,
		resync:      make(chan struct{}, 1),
		members:     map[string]etcdNode{},
	}
}

// start registers this member, publishes the members etcd holds and keeps
// both going until shutdown.
func (m *etcdMembership) start() error {
	// An etcd that accepts connections and never answers makes start
	// fail, not hang: each call is bounded.
	ctx, cancel := context.WithTimeout(m.ctx, m.callTimeout)
	err := m.register(ctx)
	cancel()
	if err != nil {
		return err
	}
	ctx, cancel = context.WithTimeout(m.ctx, m.callTimeout)
	rev, err := m.list(ctx)
	cancel()
	if err != nil {
		return err
	}
	m.wg.Add(2)
	go m.keepAlive()
	go m.watch(rev)
	return nil
}

// shutdown stops the loops and, when leave is set, deletes this member's
// key and revokes its lease (the others see it leave at once); each
// request is bounded by the member's TTL.
func (m *etcdMembership) shutdown(leave bool) error {
	var err error
	m.stop.Do(func() {
		m.cancel()
		m.wg.Wait()
		if leave {
			ctx, cancel := context.WithTimeout(context.Background(), m.ttl)
			defer cancel()
			err = m.call(ctx, "/v3/kv/deleterange", map[string]any{"key": []byte(m.key)}, nil)
			m.mu.Lock()
			lease := m.lease
			m.mu.Unlock()
			if lease != 0 {
				if rerr := m.call(ctx, "/v3/lease/revoke", map[string]any{"ID": strconv.FormatInt(lease, 10)}, nil); err == nil {
					err = rerr
				}
			}
		}
		m.hc.CloseIdleConnections()
	})
	return err
}

// register grants a new lease and puts this member's key on it.
func (m *etcdMembership) register(ctx context.Context) error {
	var grant struct {
		ID  jsonInt64 `json:"ID"`
		TTL jsonInt64 `json:"TTL"`
	}
	if err := m.call(ctx, "/v3/lease/grant", map[string]any{"TTL": int64(m.ttl / time.Second)}, &grant); err != nil {
		return fmt.Errorf("cluster: etcd lease: %w", err)
	}
	if grant.ID <= 0 || grant.TTL <= 0 {
		return fmt.Errorf("cluster: etcd granted lease %d with TTL %d", grant.ID, grant.TTL)
	}
	value, err := json.Marshal(m.self)
	if err != nil {
		return err
	}
	put := map[string]any{"key": []byte(m.key), "value": value, "lease": strconv.FormatInt(int64(grant.ID), 10)}
	if err := m.call(ctx, "/v3/kv/put", put, nil); err != nil {
		return fmt.Errorf("cluster: etcd put %s: %w", m.key, err)
	}
	m.mu.Lock()
	m.lease = int64(grant.ID)
	m.mu.Unlock()
	return nil
}

// keepAlive renews the lease every third of the TTL; a lease etcd no
// longer knows (it expired while etcd was out of reach) is replaced and
// the key put again.
func (m *etcdMembership) keepAlive() {
	defer m.wg.Done()
	t := time.NewTicker(m.ttl / 3)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(m.ctx, m.ttl/3)
		err := m.renew(ctx)
		cancel()
		if m.ctx.Err() != nil {
			return
		}
		if errors.Is(err, errLeaseGone) {
			m.log.Warn("cluster: the member's etcd lease expired (etcd out of reach for longer than the lease?); registering again", "key", m.key)
			ctx, cancel := context.WithTimeout(m.ctx, m.ttl)
			err = m.register(ctx)
			cancel()
		}
		switch {
		case err != nil && !failing:
			failing = true
			m.log.Warn("cluster: etcd keep-alive failed; retrying", "err", err)
		case err == nil && failing:
			failing = false
			m.log.Info("cluster: etcd keep-alive works again")
			// The watch's connection may have died unnoticed meanwhile.
			m.askResync()
		}
	}
}

// errLeaseGone: etcd does not know this member's lease any more.
var errLeaseGone = errors.New("lease expired")

// renew sends one keep-alive for the lease.
func (m *etcdMembership) renew(ctx context.Context) error {
	m.mu.Lock()
	lease := m.lease
	m.mu.Unlock()
	var ka struct {
		Result struct {
			TTL jsonInt64 `json:"TTL"`
		} `json:"result"`
		Error string `json:"error"`
	}
	if err := m.call(ctx, "/v3/lease/keepalive", map[string]any{"ID": strconv.FormatInt(lease, 10)}, &ka); err != nil {
		return err
	}
	if ka.Error != "" {
		return errors.New(ka.Error)
	}
	if ka.Result.TTL <= 0 {
		return errLeaseGone
	}
	return nil
}

func (m *etcdMembership) askResync() {
	select {
	case m.resync <- struct{}{}:
	default:
	}
}

// rangeEnd is the end of the key range of every key starting with prefix.
func rangeEnd(prefix string) []byte {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0} // every key
}

// list reads every member, publishes them and returns the revision they
// were read at.
func (m *etcdMembership) list(ctx context.Context) (int64, error) {
	var r struct {
		Header struct {
			Revision jsonInt64 `json:"revision"`
		} `json:"header"`
		KVs []etcdKV `json:"kvs"`
	}
	req := map[string]any{"key": []byte(m.prefix), "range_end": rangeEnd(m.prefix)}
	if err := m.call(ctx, "/v3/kv/range", req, &r); err != nil {
		return 0, fmt.Errorf("cluster: etcd list members: %w", err)
	}
	clear(m.members)
	for _, kv := range r.KVs {
		m.apply(etcdEvent{KV: kv})
	}
	m.members[m.self.ID] = m.self
	m.publishMembers()
	return int64(r.Header.Revision), nil
}

// watch follows the members from the revision after rev; when the watch
// breaks (etcd restarted, a compaction, a connection lost) it lists them
// again and follows from there.
func (m *etcdMembership) watch(rev int64) {
	defer m.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		err := m.watchFrom(rev + 1)
		if m.ctx.Err() != nil {
			return
		}
		if err != nil {
			m.log.Warn("cluster: etcd watch of the members broke; listing them again", "err", err, "after", backoff)
		}
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, watchBackoffMax)
		ctx, cancel := context.WithTimeout(m.ctx, m.ttl)
		r, err := m.list(ctx)
		cancel()
		if err != nil {
			if m.ctx.Err() == nil {
				m.log.Warn("cluster: etcd list of the members failed; keeping the members known", "err", err)
			}
			continue
		}
		rev, backoff = r, 100*time.Millisecond
	}
}

type etcdKV struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
}

type etcdEvent struct {
	Type string `json:"type"` // "" (PUT) or "DELETE"
	KV   etcdKV `json:"kv"`
}

// watchMessage is one message of etcd's watch stream.
type watchMessage struct {
	Result struct {
		Created      bool        `json:"created"`
		Canceled     bool        `json:"canceled"`
		CancelReason string      `json:"cancel_reason"`
		Compacted    jsonInt64   `json:"compact_revision"`
		Events       []etcdEvent `json:"events"`
	} `json:"result"`
	Error string `json:"error"`
}

// parseWatchMessage reads one line of the watch stream.
func parseWatchMessage(line []byte) (watchMessage, error) {
	var w watchMessage
	if err := json.Unmarshal(line, &w); err != nil {
		return w, fmt.Errorf("watch message: %w", err)
	}
	switch {
	case w.Error != "":
		return w, fmt.Errorf("watch: %s", w.Error)
	case w.Result.Canceled:
		return w, fmt.Errorf("watch canceled by etcd (compacted at %d): %s", w.Result.Compacted, w.Result.CancelReason)
	}
	return w, nil
}

// watchFrom streams the changes of the members from rev until the stream
// ends, fails or a resync is asked for.
func (m *etcdMembership) watchFrom(rev int64) error {
	ctx, cancel := context.WithCancel(m.ctx)
	defer cancel()
	go func() {
		select {
		case <-m.resync:
			cancel()
		case <-ctx.Done():
		}
	}()
	req := map[string]any{"create_request": map[string]any{
		"key": []byte(m.prefix), "range_end": rangeEnd(m.prefix), "start_revision": strconv.FormatInt(rev, 10),
	}}
	body, err := m.post(ctx, "/v3/watch", req)
	if err != nil {
		return err
	}
	defer body.Close()
	r := bufio.NewReaderSize(body, 64<<10)
	for {
		line, err := readLine(r, maxEtcdMessage)
		if err != nil {
			if ctx.Err() != nil {
				return nil // resync or shutdown
			}
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		w, err := parseWatchMessage(line)
		if err != nil {
			return err
		}
		if len(w.Result.Events) == 0 {
			continue
		}
		for _, ev := range w.Result.Events {
			m.apply(ev)
		}
		m.publishMembers()
	}
}

// readLine reads one newline-ended line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(line)+len(part) > max {
			return nil, fmt.Errorf("etcd message longer than %d bytes", max)
		}
		line = append(line, part...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// apply changes the members by one event; what is not a member's key or
// value is logged and left out.
func (m *etcdMembership) apply(ev etcdEvent) {
	id, ok := strings.CutPrefix(string(ev.KV.Key), m.prefix)
	if !ok || id == "" || strings.Contains(id, "/") {
		m.log.Warn("cluster: not a member key in etcd; ignored", "key", string(ev.KV.Key))
		return
	}
	if ev.Type == "DELETE" {
		delete(m.members, id)
		return
	}
	var n etcdNode
	if err := json.Unmarshal(ev.KV.Value, &n); err != nil || n.ID != id {
		m.log.Warn("cluster: not a member value in etcd (or not this key's member); ignored", "key", string(ev.KV.Key), "err", err)
		return
	}
	if host, port := n.hostPort(); host == "" || port <= 0 || port > 65535 {
		m.log.Warn("cluster: a member in etcd without a reachable address; ignored", "key", string(ev.KV.Key), "host", host, "port", port)
		return
	}
	if !n.Alive {
		delete(m.members, id)
		return
	}
	if _, known := m.members[id]; !known && len(m.members) >= maxMembers {
		m.log.Warn("cluster: more members in etcd than a node keeps; ignored", "key", string(ev.KV.Key), "max", maxMembers)
		return
	}
	m.members[id] = n
}

// publishMembers hands the members, ordered by id, to publish; this
// member is always among them.
func (m *etcdMembership) publishMembers() {
	ids := make([]string, 0, len(m.members)+1)
	if _, ok := m.members[m.self.ID]; !ok {
		m.members[m.self.ID] = m.self
	}
	for id := range m.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]etcdNode, len(ids))
	for i, id := range ids {
		out[i] = m.members[id]
	}
	m.publish(out)
}

// call posts req to path as JSON and decodes the answer into resp (when
// not nil), trying each endpoint from the one that answered last.
func (m *etcdMembership) call(ctx context.Context, path string, req, resp any) error {
	body, err := m.post(ctx, path, req)
	if err != nil {
		return err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, maxEtcdMessage+1))
	if err != nil {
		return err
	}
	if len(data) > maxEtcdMessage {
		return fmt.Errorf("etcd %s: answer longer than %d bytes", path, maxEtcdMessage)
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	return nil
}

// post sends one request and returns the body of a 200 answer; an error
// answer is read (bounded) into the error.
func (m *etcdMembership) post(ctx context.Context, path string, req any) (io.ReadCloser, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	first := m.ep
	m.mu.Unlock()
	var errs []error
	for i := range m.endpoints {
		ep := (first + i) % len(m.endpoints)
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoints[ep]+path, bytes.NewReader(payload))
		if err != nil {
			return nil, err
		}
		hr.Header.Set("Content-Type", "application/json")
		res, err := m.hc.Do(hr)
		if err != nil {
			errs = append(errs, explainEtcdTLS(err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if res.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
			res.Body.Close()
			var e struct {
				Error string `json:"error"`
			}
			if json.Unmarshal(msg, &e) == nil && e.Error != "" {
				msg = []byte(e.Error)
			}
			errs = append(errs, fmt.Errorf("%s: %s: %s", m.endpoints[ep], res.Status, bytes.TrimSpace(msg)))
			continue
		}
		m.mu.Lock()
		m.ep = ep
		m.mu.Unlock()
		return res.Body, nil
	}
	return nil, errors.Join(errs...)
}

// jsonInt64 is an int64 of etcd's JSON: a string, or a number.
type jsonInt64 int64

func (n *jsonInt64) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	if s == "null" || s == "" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an int64: %s", b)
	}
	*n = jsonInt64(v)
	return nil
}
