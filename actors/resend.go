package actors

// ResendPending asks every edge actor to send its awaited commands again
// under their request_ids. A clustered node sends it when another node
// leaves the cluster: the broker hands each report to one node, which
// relays it to the node whose call it answers, so a report taken by a
// node that died before relaying it is lost with that node. The agent
// runs a request_id at most once and answers a repeat from its request
// log (a finished call's result again; nothing for a running one, whose
// report is still to come), so resending is safe and recovers the lost
// report before the call's deadline.
type ResendPending struct{}
