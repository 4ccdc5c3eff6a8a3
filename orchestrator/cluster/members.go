// Package cluster joins a node to other evoclaw nodes with protoactor-go's
// cluster: membership from etcd (a provider speaking etcd's JSON gateway,
// etcdgw.go), grains placed by distributed hashing (disthash), and actor
// messages between the nodes over protoactor remote. It is started only
// when [cluster] names etcd endpoints; the build tag nocluster leaves
// protoactor's cluster and its gRPC remote out of the binary altogether.
// docs/CLUSTER.md describes the design.
package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
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
// package downloads must not carry the cluster's membership), and to an
// https endpoint with tlsConf: the client side of [cluster.tls], which
// presents the node's certificate and accepts an etcd whose certificate
// the cluster's CA signed. Nil tlsConf leaves https to the system's roots,
// which no etcd of a cluster has; Config.Validate refuses that pairing.
func etcdTransport(tlsConf *tls.Config) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if tlsConf != nil {
		tr.TLSClientConfig = tlsConf.Clone()
	}
	// HTTP/1.1 over TLS as in plain text: HTTP/2 reports etcd refusing
	// the node's certificate as "client conn could not be established",
	// dropping the TLS alert that says why. The few streams of a member
	// (watch, keep-alive) take a connection each.
	var protos http.Protocols
	protos.SetHTTP1(true)
	tr.Protocols = &protos
	return tr
}

// etcdBaseURL is the URL of a configured endpoint ("host:port",
// "http://host:port" or "https://host:port"), without a trailing slash.
func etcdBaseURL(endpoint string) string {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	return strings.TrimSuffix(endpoint, "/")
}

// probeEtcd asks the endpoints for their health within the dial timeout,
// over https with tlsConf where an endpoint says so, so that a node
// without a healthy etcd (or one its certificate does not let in) refuses
// to start with one clear error before anything else is started.
func probeEtcd(endpoints []string, tlsConf *tls.Config) error {
	tr := etcdTransport(tlsConf)
	defer tr.CloseIdleConnections()
	hc := http.Client{Timeout: DefaultDialTimeout, Transport: tr}
	var errs []error
	for _, e := range endpoints {
		resp, err := hc.Get(etcdBaseURL(e) + "/health")
		if err != nil {
			errs = append(errs, explainEtcdTLS(err))
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

// explainEtcdTLS adds to an error of a request to etcd what it means when
// the certificates of either side are at fault: the raw TLS errors name
// neither etcd nor the files to look at. Other errors are returned as is.
func explainEtcdTLS(err error) error {
	var op *net.OpError
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &op) && op.Op == "remote error":
		return fmt.Errorf("%w (etcd refused this node's certificate: run etcd with --trusted-ca-file naming the cluster's ca.crt, and set cluster.tls.cert_file to a certificate that CA signed)", err)
	case errors.As(err, &unknown), errors.As(err, &invalid):
		return fmt.Errorf("%w (etcd's certificate is not one the cluster's CA in cluster.tls.ca_file signed and is valid now: make it with `evoclaw cluster cert --dir DIR etcd --host <etcd address>`)", err)
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET):
		// TLS 1.3: the client's handshake ends before etcd checks the
		// client's certificate, so a refusal may show as a closed
		// connection.
		return fmt.Errorf("%w (etcd closed the connection; over https it does so when it refuses this node's certificate)", err)
	}
	return err
}
