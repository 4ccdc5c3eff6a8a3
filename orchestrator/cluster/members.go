// Package cluster joins a node to other evoclaw nodes with protoactor-go's
// cluster: membership from etcd (a provider speaking etcd's JSON gateway,
// etcdgw.go), grains placed by distributed hashing (disthash), and actor
// messages between the nodes over protoactor remote. It is started only
// when [cluster] names etcd endpoints; the build tag nocluster leaves
// protoactor's cluster and its gRPC remote out of the binary altogether.
// docs/CLUSTER.md describes the design.
package cluster

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Member is one node of the cluster as the membership sees it.
type Member struct {
	// Node is the member's evoclaw node_id.
	Node string `json:"node"`
	// ID is its protoactor member id: cluster@node.instance, new at
	// every start of the process.
	ID string `json:"id"`
	// Address is where the other nodes reach it (host:port).
	Address string `json:"address"`
	// Self marks the node answering.
	Self bool `json:"self,omitempty"`
}

// Status is the membership a node sees now.
type Status struct {
	Name    string   `json:"name"`
	Self    string   `json:"self"`
	Members []Member `json:"members"`
	// Reports counts the agents' reports this node routed (see
	// docs/CLUSTER.md, "Agents' reports").
	Reports ReportCounts `json:"reports"`
	// APIForwarded counts the answers to questions and the approvals
	// read or decided through this node's API for another node.
	APIForwarded int64 `json:"api_forwarded"`
	// CallsMoved counts this node's tool calls placed again at their
	// agent's new owner after the membership changed.
	CallsMoved int64 `json:"calls_moved"`
}

// ReportCounts are the agents' reports a node routed: the broker hands
// each report to one node of the cluster (a shared subscription), which
// keeps it, relays it to the node holding the agent's calls (the owner
// of its grain), or (a report answering no call: heartbeats, tools_list
// replies) keeps it and relays it to every other node.
type ReportCounts struct {
	// FromBroker is how many reports the broker delivered to this node.
	FromBroker int64 `json:"from_broker"`
	// ToOwner is how many reports answering a call this node relayed to
	// the node holding the agent's calls.
	ToOwner int64 `json:"to_owner"`
	// ToAll is how many reports answering no node in particular this
	// node relayed to every other node (counted once per report).
	ToAll int64 `json:"to_all"`
	// RelayedIn is how many reports other nodes relayed to this one.
	RelayedIn int64 `json:"relayed_in"`
	// NoOwner is how many reports answered a call of a node that is not
	// a member (it died): dropped, as its calls ended with it.
	NoOwner int64 `json:"no_owner"`
}

// NodeOf returns the node_id inside a member id (cluster@node.instance).
func NodeOf(memberID string) string {
	s := memberID
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[:i]
	}
	return s
}

// etcdTransport is how a node reaches etcd: directly, never through a
// proxy that the environment names for other traffic (HTTP_PROXY set for
// package downloads must not carry the cluster's membership).
func etcdTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	return tr
}

// etcdBaseURL is the URL of a configured endpoint ("host:port" or
// "http://host:port"), without a trailing slash.
func etcdBaseURL(endpoint string) string {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	return strings.TrimSuffix(endpoint, "/")
}

// probeEtcd asks the endpoints for their health over plain HTTP within
// the dial timeout, so that a node without a healthy etcd refuses to
// start with one clear error before anything else is started.
func probeEtcd(endpoints []string) error {
	hc := http.Client{Timeout: DefaultDialTimeout, Transport: etcdTransport()}
	var errs []error
	for _, e := range endpoints {
		resp, err := hc.Get(etcdBaseURL(e) + "/health")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: health %s", e, resp.Status))
	}
	return fmt.Errorf("cluster: no etcd endpoint is healthy within %s: %w", DefaultDialTimeout, errors.Join(errs...))
}
