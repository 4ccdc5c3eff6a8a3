package orchestrator

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// nodeCollector exposes the node's counters to Prometheus, read at scrape
// time from the loop metrics, the edge catalog and the audit tiers: nothing
// is counted twice and nothing runs between scrapes.
type nodeCollector struct {
	n *Node

	toolCalls, toolErrors, toolTimeouts, toolMs    *prometheus.Desc
	llmCalls, llmErrors, batches, savedMs, maxConc *prometheus.Desc
	agents, coldLag, coldShipped, retentionDeleted *prometheus.Desc
	progress                                       *prometheus.Desc
	inputAvailable, inputTaken, inputRefused       *prometheus.Desc
}

func newNodeCollector(n *Node) *nodeCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("evoclaw_"+name, help, labels, prometheus.Labels{"node": n.cfg.NodeID})
	}
	return &nodeCollector{n: n,
		toolCalls:        d("tool_calls_total", "Tool calls that ended, by the name the model used; names no turn offered count as (not offered).", "tool"),
		toolErrors:       d("tool_errors_total", "Tool calls that ended with an error, timeouts included.", "tool"),
		toolTimeouts:     d("tool_timeouts_total", "Tool calls that timed out.", "tool"),
		toolMs:           d("tool_duration_ms_total", "Sum of tool call durations in milliseconds.", "tool"),
		llmCalls:         d("llm_calls_total", "Completions requested from the provider chain."),
		llmErrors:        d("llm_errors_total", "Completions that failed."),
		batches:          d("parallel_batches_total", "Turns that ran more than one tool call."),
		savedMs:          d("parallel_saved_ms_total", "Wall time running tool calls in parallel saved, in milliseconds."),
		maxConc:          d("tool_max_concurrency", "Most tool calls of one turn seen running at once."),
		agents:           d("agents", "Edge agents known to the node, by presence.", "state"),
		coldLag:          d("audit_cold_lag_records", "Audit records waiting to be shipped to the cold tier."),
		coldShipped:      d("audit_cold_shipped_records_total", "Audit records shipped to the cold tier since start."),
		retentionDeleted: d("audit_retention_deleted_records_total", "Audit records deleted from warm by retention since start."),
		progress: d("progress_reports_total", "Progress reports (streamed tool output) received from agents, by what became of them: "+
			"routed to a waiting tool call, or dropped as unknown_request, invalid or rate_limited.", "outcome"),
		inputAvailable: d("chat_input_available_bytes", "Input API clients' chats may bring the node now ([loop] chat_input_mb_per_hour, with its burst)."),
		inputTaken:     d("chat_input_bytes_total", "Input API clients' chats brought the node, as the chat input budget counts it."),
		inputRefused:   d("chat_input_refused_total", "Chats refused (429) because their input did not fit the chat input budget."),
	}
}

// Describe implements prometheus.Collector.
func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.toolCalls, c.toolErrors, c.toolTimeouts, c.toolMs, c.llmCalls, c.llmErrors,
		c.batches, c.savedMs, c.maxConc, c.agents, c.coldLag, c.coldShipped, c.retentionDeleted, c.progress,
		c.inputAvailable, c.inputTaken, c.inputRefused} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.n.Metrics()
	for _, name := range m.ToolNames() {
		t := m.Tools[name]
		ch <- prometheus.MustNewConstMetric(c.toolCalls, prometheus.CounterValue, float64(t.Calls), name)
		ch <- prometheus.MustNewConstMetric(c.toolErrors, prometheus.CounterValue, float64(t.Errors), name)
		ch <- prometheus.MustNewConstMetric(c.toolTimeouts, prometheus.CounterValue, float64(t.Timeouts), name)
		ch <- prometheus.MustNewConstMetric(c.toolMs, prometheus.CounterValue, float64(t.TotalMs), name)
	}
	ch <- prometheus.MustNewConstMetric(c.llmCalls, prometheus.CounterValue, float64(m.LLMCalls))
	ch <- prometheus.MustNewConstMetric(c.llmErrors, prometheus.CounterValue, float64(m.LLMErrors))
	ch <- prometheus.MustNewConstMetric(c.batches, prometheus.CounterValue, float64(m.ParallelBatches))
	ch <- prometheus.MustNewConstMetric(c.savedMs, prometheus.CounterValue, float64(m.WallTimeSavedMs))
	ch <- prometheus.MustNewConstMetric(c.maxConc, prometheus.GaugeValue, float64(m.MaxConcurrency))
	online, offline := 0, 0
	for _, a := range c.n.Catalog().Agents {
		if a.Online {
			online++
		} else {
			offline++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.agents, prometheus.GaugeValue, float64(online), "online")
	ch <- prometheus.MustNewConstMetric(c.agents, prometheus.GaugeValue, float64(offline), "offline")
	ps := c.n.ProgressStats()
	for outcome, v := range map[string]int64{"routed": ps.Routed.Load(), "unknown_request": ps.Unknown.Load(),
		"invalid": ps.Invalid.Load(), "rate_limited": ps.RateLimited.Load()} {
		ch <- prometheus.MustNewConstMetric(c.progress, prometheus.CounterValue, float64(v), outcome)
	}
	if in := c.n.chatInput.status(c.n.now()); in != nil {
		ch <- prometheus.MustNewConstMetric(c.inputAvailable, prometheus.GaugeValue, float64(in.AvailableBytes))
		ch <- prometheus.MustNewConstMetric(c.inputTaken, prometheus.CounterValue, float64(in.TakenBytes))
		ch <- prometheus.MustNewConstMetric(c.inputRefused, prometheus.CounterValue, float64(in.Refused))
	}
	st := c.n.AuditStatus()
	ch <- prometheus.MustNewConstMetric(c.retentionDeleted, prometheus.CounterValue, float64(st.Retention.TotalDeleted))
	if st.Cold != nil {
		ch <- prometheus.MustNewConstMetric(c.coldLag, prometheus.GaugeValue, float64(st.Cold.Lag))
		ch <- prometheus.MustNewConstMetric(c.coldShipped, prometheus.CounterValue, float64(st.Cold.Shipped))
	}
}

// metricsHandler serves the node's metrics and the Go runtime's in the
// Prometheus text format, from a registry of its own (no global state).
func (n *Node) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newNodeCollector(n), newInboundCollector(n), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
