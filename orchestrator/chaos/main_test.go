package chaos

import (
	"testing"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
)

// evoclawBinary is the binary the scenarios' agents and broker run as.
func evoclawBinary(t *testing.T) string { return evoclawtest.Binary(t) }

func TestMain(m *testing.M) { evoclawtest.Main(m) }
