package actors

// recentReportsLen bounds how many settled reports an edge actor
// remembers: a duplicate delivery comes within seconds of the first (a
// QoS 1 publish resent on reconnect beside its outbox copy), far fewer
// than MaxInFlight answers later.
const recentReportsLen = 64

// recentReports remembers the last reports an edge actor settled (handed
// to their waiter, or audited as late), by request_id and report type, so
// a report delivered again is recognised: MQTT QoS 1 is at least once,
// and an agent resends a result whose publish timed out from its outbox
// while its MQTT client resends the same publish after reconnecting. It
// holds at most recentReportsLen keys, forgetting the oldest. The zero
// value is ready for use; it belongs to one actor and is not safe for
// concurrent use.
type recentReports struct {
	keys []string // ring, next at keys[next] once full
	next int
	set  map[string]struct{}
}

func recentKey(requestID, reportType string) string { return reportType + "\x00" + requestID }

// seen reports whether the report was settled recently.
func (r *recentReports) seen(requestID, reportType string) bool {
	_, ok := r.set[recentKey(requestID, reportType)]
	return ok
}

// add remembers a settled report, forgetting the oldest beyond the bound.
func (r *recentReports) add(requestID, reportType string) {
	k := recentKey(requestID, reportType)
	if _, ok := r.set[k]; ok {
		return
	}
	if r.set == nil {
		r.set = make(map[string]struct{}, recentReportsLen)
	}
	if len(r.keys) < recentReportsLen {
		r.keys = append(r.keys, k)
	} else {
		delete(r.set, r.keys[r.next])
		r.keys[r.next] = k
		r.next = (r.next + 1) % recentReportsLen
	}
	r.set[k] = struct{}{}
}
