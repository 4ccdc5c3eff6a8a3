//go:build !linux

package auditquery

// limitsEnv and limitsChild test Linux's limits (limit_linux_test.go).
const limitsEnv = "EVOCLAW_AUDITQUERY_TEST_LIMITS"

func limitsChild() int { return 0 }
