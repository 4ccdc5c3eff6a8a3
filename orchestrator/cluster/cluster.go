//go:build !nocluster

package cluster

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// etcdBaseKey is the etcd key prefix of every evoclaw cluster's members.
const etcdBaseKey = "/evoclaw"

// Cluster is this node's membership in the cluster.
type Cluster struct {
	pc   *pcluster.Cluster
	name string
	self string
	log  *slog.Logger

	mu      sync.Mutex
	members []Member
	// rdv places identities on the members as protoactor's disthash
	// does (rendezvous hashing over the members of the kind), so this
	// node can name an identity's owner without asking anyone.
	rdv *pcluster.Rendezvous
	// onLeft are called with the members that left, and onChange after
	// every new topology, on the event stream's goroutine.
	onLeft   []func(left []Member)
	onChange []func()

	sub       any // the event stream subscription
	closeOnce sync.Once
}

// Start joins system to the cluster cfg describes, under nodeID, with the
// grain kinds given. It fails, instead of waiting forever, when no etcd
// endpoint answers within DefaultDialTimeout.
func Start(system *actor.ActorSystem, nodeID string, cfg Config, kinds []*pcluster.Kind, log *slog.Logger) (_ *Cluster, err error) {
	if !cfg.Enabled() {
		return nil, errors.New("cluster: not configured")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := time.Now()
	ropts, err := remoteOptions(cfg, now)
	if err != nil {
		return nil, err
	}
	etcdTLS, err := etcdClientTLS(cfg, now)
	if err != nil {
		return nil, err
	}
	if err := probeEtcd(cfg.Etcd, etcdTLS); err != nil {
		return nil, err
	}
	provider := &etcdProvider{endpoints: cfg.Etcd, tls: etcdTLS, log: log}
	rcfg := remote.Configure(cfg.Host, cfg.Port, ropts...)
	pcfg := pcluster.Configure(cfg.Name, provider, disthash.New(), rcfg, pcluster.WithKinds(kinds...))
	// The member id is node.instance: a restarted node is a new member,
	// so the lease of its previous life expiring never removes it.
	system.ID = nodeID + "." + instanceID()
	c := &Cluster{name: cfg.Name, self: cfg.Name + "@" + system.ID, log: log, rdv: pcluster.NewRendezvous()}
	c.pc = pcluster.New(system, pcfg)
	c.sub = system.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*pcluster.ClusterTopology); ok {
			c.topology(t)
		}
	})
	// StartMember panics on what it cannot recover from (a port in use).
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: start member on %s:%d: %v", cfg.Host, cfg.Port, r)
		}
	}()
	c.pc.StartMember()
	log.Info("joined cluster", "cluster", cfg.Name, "member", c.self, "address", system.Address(), "mutual_tls", !cfg.TLS.IsZero())
	return c, nil
}

// remoteOptions are the actor remote's options for cfg at time now: the
// advertised address, and with [cluster.tls] the mutual TLS of its server
// and of its dials. WithDialOptions replaces protoactor's default dial
// options (grpc.WithInsecure alone), so no dial goes out in plain text.
func remoteOptions(cfg Config, now time.Time) ([]remote.ConfigOption, error) {
	var ropts []remote.ConfigOption
	if cfg.Advertise != "" {
		ropts = append(ropts, remote.WithAdvertisedHost(cfg.Advertise))
	}
	if cfg.TLS.IsZero() {
		return ropts, nil
	}
	server, client, err := cfg.TLS.Load(now)
	if err != nil {
		return nil, err
	}
	return append(ropts,
		remote.WithServerOptions(grpc.Creds(credentials.NewTLS(server))),
		remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(client)))), nil
}

// etcdClientTLS is the TLS of the node's dials to etcd's https endpoints
// at time now: the client side of [cluster.tls] (TLSFiles.Load), nil
// without [cluster.tls].
func etcdClientTLS(cfg Config, now time.Time) (*tls.Config, error) {
	if cfg.TLS.IsZero() {
		return nil, nil
	}
	_, client, err := cfg.TLS.Load(now)
	return client, err
}

// etcdProvider is the cluster provider protoactor's cluster starts the
// member with: this member's key in etcd and the watch of the others
// (etcdgw.go), made once the actor remote has started and the member's
// address is known.
type etcdProvider struct {
	endpoints []string
	tls       *tls.Config // of https endpoints; nil without [cluster.tls]
	log       *slog.Logger
	m         *etcdMembership
}

func (p *etcdProvider) StartMember(c *pcluster.Cluster) error {
	h, port, err := net.SplitHostPort(c.ActorSystem.Address())
	if err != nil {
		return fmt.Errorf("cluster: member address: %w", err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("cluster: member address %q: %w", c.ActorSystem.Address(), err)
	}
	id := c.Config.Name + "@" + c.ActorSystem.ID
	self := etcdNode{ID: id, Name: id, Host: h, Address: h, Port: n, Kinds: c.GetClusterKinds(), Alive: true}
	p.m = newEtcdMembership(p.endpoints, p.tls, etcdBaseKey, c.Config.Name, self, func(nodes []etcdNode) {
		ms := make([]*pcluster.Member, len(nodes))
		for i, n := range nodes {
			host, port := n.hostPort()
			kinds := n.Kinds
			if kinds == nil {
				kinds = []string{}
			}
			ms[i] = &pcluster.Member{Id: n.ID, Host: host, Port: int32(port), Kinds: kinds}
		}
		c.MemberList.UpdateClusterTopology(ms)
	}, p.log)
	if err := p.m.start(); err != nil {
		_ = p.m.shutdown(true)
		return err
	}
	return nil
}

func (p *etcdProvider) StartClient(*pcluster.Cluster) error {
	return errors.New("cluster: a node is always a member")
}

// Shutdown leaves etcd: the member's key is deleted and its lease
// revoked, each within the lease's TTL.
func (p *etcdProvider) Shutdown(bool) error {
	if p.m == nil {
		return nil
	}
	return p.m.shutdown(true)
}

// instanceID is 8 random hex digits.
func instanceID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// topology records the members of a new topology and tells the onLeft
// callbacks who left.
func (c *Cluster) topology(t *pcluster.ClusterTopology) {
	ms := make([]Member, 0, len(t.Members))
	for _, m := range t.Members {
		ms = append(ms, c.member(m))
	}
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.Node+a.ID, b.Node+b.ID) })
	var left []Member
	for _, m := range t.Left {
		left = append(left, c.member(m))
	}
	c.rdv.UpdateMembers(t.Members)
	c.mu.Lock()
	c.members = ms
	cbs, changed := slices.Clone(c.onLeft), slices.Clone(c.onChange)
	c.mu.Unlock()
	if len(left) > 0 {
		c.log.Warn("cluster members left", "members", left)
		for _, f := range cbs {
			f(left)
		}
	}
	for _, f := range changed {
		f()
	}
}

// OwnerOf returns the actor address of the member that owns identity of
// kind: the member protoactor's disthash lookup activates its grain on.
// "" while no member of the kind is known (before the first topology).
func (c *Cluster) OwnerOf(identity, kind string) string {
	return c.rdv.GetByClusterIdentity(pcluster.NewClusterIdentity(identity, kind))
}

// OwnerAmong returns which of the members at addresses would own
// identity of kind, all of them hosting the kind: the placement OwnerOf
// and disthash make, for a membership that is not (yet) the current one.
func OwnerAmong(addresses []string, identity, kind string) (string, error) {
	ms := make(pcluster.Members, 0, len(addresses))
	for i, a := range addresses {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return "", err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return "", fmt.Errorf("member address %q: %w", a, err)
		}
		ms = append(ms, &pcluster.Member{Id: strconv.Itoa(i), Host: host, Port: int32(p), Kinds: []string{kind}})
	}
	r := pcluster.NewRendezvous()
	r.UpdateMembers(ms)
	return r.GetByClusterIdentity(pcluster.NewClusterIdentity(identity, kind)), nil
}

// NodeAt returns the node id of the member at address ("" for none).
func (c *Cluster) NodeAt(address string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		if m.Address == address {
			return m.Node
		}
	}
	return ""
}

// IsMember says whether node has a member in the cluster now (this
// node included).
func (c *Cluster) IsMember(node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		if m.Node == node {
			return true
		}
	}
	return false
}

// OnChange registers f to be called after every new topology (a member
// joined or left); it runs on the actor system's event stream and must
// be quick.
func (c *Cluster) OnChange(f func()) {
	c.mu.Lock()
	c.onChange = append(c.onChange, f)
	c.mu.Unlock()
}

// member converts a protoactor member.
func (c *Cluster) member(m *pcluster.Member) Member {
	return Member{Node: NodeOf(m.Id), ID: m.Id, Address: net.JoinHostPort(m.Host, strconv.Itoa(int(m.Port))), Self: m.Id == c.self}
}

// OnLeft registers f to be told the members that leave; it runs on the
// actor system's event stream and must be quick.
func (c *Cluster) OnLeft(f func(left []Member)) {
	c.mu.Lock()
	c.onLeft = append(c.onLeft, f)
	c.mu.Unlock()
}

// Status returns the members this node sees now.
func (c *Cluster) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Status{Name: c.name, Self: c.self, Members: slices.Clone(c.members)}
}

// Self is this node's member id.
func (c *Cluster) Self() string { return c.self }

// Proto is protoactor's cluster, for the grain calls of this node.
func (c *Cluster) Proto() *pcluster.Cluster { return c.pc }

// closeTimeout bounds leaving the cluster: the provider deletes the
// member's key without a deadline, and an unreachable etcd would hold the
// node's stop forever.
const closeTimeout = 15 * time.Second

// Close leaves the cluster gracefully (the member's etcd key is deleted
// at once, not at the end of its lease) and shuts the actor system down;
// after closeTimeout it gives up waiting (the lease then ends the
// membership).
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.pc.Shutdown(true)
		}()
		select {
		case <-done:
		case <-time.After(closeTimeout):
			c.log.Warn("leaving the cluster takes too long (etcd unreachable?); the lease will end the membership", "after", closeTimeout)
		}
	})
}

// AddressesOf returns the actor addresses of the other members running
// node (one, or two for the moments a restarted node's previous life is
// still a member).
func (c *Cluster) AddressesOf(node string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.members {
		if m.Node == node && !m.Self {
			out = append(out, m.Address)
		}
	}
	return out
}

// OtherAddresses returns the actor addresses of every member but this one.
func (c *Cluster) OtherAddresses() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.members))
	for _, m := range c.members {
		if !m.Self {
			out = append(out, m.Address)
		}
	}
	return out
}
