package orchestrator

import "github.com/prometheus/client_golang/prometheus"

// inboundCollector exposes what the node refused to take from agents, read
// at scrape time from the inbound guard.
type inboundCollector struct {
	in                  *inbound
	dropped, suppressed *prometheus.Desc
}

func newInboundCollector(n *Node) *inboundCollector {
	labels := prometheus.Labels{"node": n.cfg.NodeID}
	return &inboundCollector{in: n.in,
		dropped: prometheus.NewDesc("evoclaw_inbound_dropped_messages_total",
			"MQTT messages from an agent dropped over its inbound rate limit.", []string{"agent"}, labels),
		suppressed: prometheus.NewDesc("evoclaw_audit_events_suppressed_total",
			"Events about agents (late results, malformed messages, presence changes) counted but not stored, over the per-agent quota.", nil, labels),
	}
}

// Describe implements prometheus.Collector.
func (c *inboundCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.dropped
	ch <- c.suppressed
}

// Collect implements prometheus.Collector.
func (c *inboundCollector) Collect(ch chan<- prometheus.Metric) {
	_, byAgent := c.in.limits.Dropped()
	for agent, n := range byAgent {
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(n), agent)
	}
	ch <- prometheus.MustNewConstMetric(c.suppressed, prometheus.CounterValue, float64(c.in.events.Refused()))
}
