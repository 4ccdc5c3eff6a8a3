package actors

import "github.com/evoclaw/evoclaw/persistence"

// agentOrigin is where an agent runs, as its agent_online event records
// it: the host name and evoclaw version its online status said (the
// agent's word, bounded by wire.DecodeStatus; empty when it said none, as
// the public agent), and the address its MQTT connection came from, which
// the node's own broker tells (EdgeOptions.AgentAddress), or why that is
// not known. notRecording is why the agent said its audit trail cannot
// write, in the same event.
type agentOrigin struct {
	host, version   string
	address, noAddr string
	notRecording    string
}

// origin is the agent's origin now: what its last online status said and
// the address of its connection as the broker tells it at this moment.
func (e *edgeActor) origin() agentOrigin {
	o := e.said
	if e.opts.AgentAddress == nil {
		o.noAddr = "not looked up: this node was started without a broker to ask"
		return o
	}
	addr, err := e.opts.AgentAddress(e.info.ID)
	if err != nil {
		o.noAddr = err.Error()
	} else {
		o.address = addr
	}
	return o
}

// same reports whether o and p are the same origin: the reason an agent
// cannot record may change its words (the free space it names) without an
// event; whether it can record may not.
func (o agentOrigin) same(p agentOrigin) bool {
	o.notRecording, p.notRecording = yesNo(o.notRecording), yesNo(p.notRecording)
	return o == p
}

// yesNo is "" for "", "yes" otherwise.
func yesNo(s string) string {
	if s == "" {
		return ""
	}
	return "yes"
}

// addTo puts o's fields into an event's detail: host and version when the
// agent said them, and address or, when it is not known, address_unknown
// with why.
func (o agentOrigin) addTo(detail map[string]any) map[string]any {
	if o.host != "" {
		detail["host"] = o.host
	}
	if o.version != "" {
		detail["version"] = o.version
	}
	if o.notRecording != "" {
		detail["not_recording"] = o.notRecording
	}
	if o.address != "" {
		detail["address"] = o.address
	} else {
		detail["address_unknown"] = o.noAddr
	}
	return detail
}

// onlineEvent records agent_online with the agent's origin now, which the
// next online status is compared with (originChanged).
func (e *edgeActor) onlineEvent(why string) {
	e.recorded = e.origin()
	e.originEvent(e.recorded.addTo(map[string]any{"why": why}))
}

// originChanged records agent_online again, with "changed": true, when an
// online status from an agent that counts as online all along (it
// reconnected before its last will was due, or the node heard a report of
// it first) comes with a host, version or address other than the last
// agent_online recorded, or says its audit trail cannot write when that
// one did not or the other way round: the trail's latest agent_online
// before a call then says where the call ran and whether the agent could
// record it. The agent says the latter only when it changes, within its
// own bound.
func (e *edgeActor) originChanged() {
	o := e.origin()
	if o.same(e.recorded) {
		return
	}
	why := "online status with another host, version or address"
	if (o.notRecording == "") != (e.recorded.notRecording == "") {
		why = "online status saying the agent cannot record"
		if o.notRecording == "" {
			why = "online status saying the agent records again"
		}
	}
	e.recorded = o
	e.originEvent(o.addTo(map[string]any{"why": why, "changed": true}))
}

// originEvent stores an agent_online with detail within the event quota.
// The first one the quota leaves out after a stored one is stored all the
// same, with "quota_reached": true, and given back to the quota (Kept): it
// counts neither in evoclaw_audit_events_suppressed_total nor in the next
// stored one's suppressed_before. The last agent_online before a call then says
// that where the agent ran since is not recorded. Left out silently, an
// agent that came online often (a flapping link, or one of its own
// statuses after another) had a later connection from elsewhere go
// unrecorded, and the trail named the origin it had left.
func (e *edgeActor) originEvent(detail map[string]any) {
	suppressed, ok := e.admitEvent(persistence.EventAgentOnline)
	switch {
	case e.opts.Events == nil:
		return
	case ok:
		e.quotaReached = false
	case e.quotaReached:
		return
	default:
		e.quotaReached = true
		detail["quota_reached"] = true
		e.opts.EventQuota.Kept(EventQuotaKey(e.info.ID, persistence.EventAgentOnline))
	}
	e.record(persistence.EventAgentOnline, detail, suppressed)
}

// noteRecording puts what the agent's last status said of its audit trail
// (e.said) into its catalog entry, and logs when that changes: an agent
// that cannot record refuses every command. An offline status ends it.
func (e *edgeActor) noteRecording(online bool) {
	nr := e.said.notRecording
	if nr == e.info.NotRecording {
		return
	}
	if nr != "" {
		e.log.Warn("edge agent NOT RECORDING: it refuses every command until its audit trail can write", "why", nr)
	} else if online {
		e.log.Info("edge agent records again")
	}
	e.info.NotRecording = nr
	e.publishInfo()
}
