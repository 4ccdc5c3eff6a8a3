package orchestrator

// AuditOverBudget reports whether the audit database's files exceed their
// disk budget ([audit] disk_budget_mb), with a sentence for the operator:
// for readiness checks. It never touches the disk (the audit tiers measure
// every 10 s).
func (n *Node) AuditOverBudget() (bool, string) { return n.tiers.OverBudget() }
