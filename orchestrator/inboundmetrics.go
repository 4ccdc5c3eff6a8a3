package orchestrator

import "github.com/prometheus/client_golang/prometheus"

// inboundCollector exposes what the node refused to take from agents, read
// at scrape time from the inbound guard, and the audit database's size
// against its disk budget.
type inboundCollector struct {
	n                                     *Node
	in                                    *inbound
	dropped, suppressed, overBudget, disk *prometheus.Desc
}

func newInboundCollector(n *Node) *inboundCollector {
	labels := prometheus.Labels{"node": n.cfg.NodeID}
	return &inboundCollector{n: n, in: n.in,
		overBudget: prometheus.NewDesc("evoclaw_audit_over_budget",
			"1 while the audit database's files exceed [audit] disk_budget_mb, else 0.", nil, labels),
		disk: prometheus.NewDesc("evoclaw_audit_disk_bytes",
			"Size of the audit database's files (database, WAL, shared memory) at the last check.", nil, labels),
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
	ch <- c.overBudget
	ch <- c.disk
}

// Collect implements prometheus.Collector.
func (c *inboundCollector) Collect(ch chan<- prometheus.Metric) {
	_, byAgent := c.in.limits.Dropped()
	for agent, n := range byAgent {
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(n), agent)
	}
	ch <- prometheus.MustNewConstMetric(c.suppressed, prometheus.CounterValue, float64(c.in.events.Refused()))
	b := c.n.AuditStatus().Budget
	over := 0.0
	if b.Over {
		over = 1
	}
	ch <- prometheus.MustNewConstMetric(c.overBudget, prometheus.GaugeValue, over)
	ch <- prometheus.MustNewConstMetric(c.disk, prometheus.GaugeValue, float64(b.UsedBytes))
}
