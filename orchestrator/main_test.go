package orchestrator

import (
	"testing"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
)

// TestMain removes the evoclaw binary that tests running real agent
// processes build (evoclawtest.Binary).
func TestMain(m *testing.M) { evoclawtest.Main(m) }
