package builtin_test

import (
	"testing"

	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/builtin/opstest"
)

func TestLocalContract(t *testing.T) {
	opstest.Run(t, func(t *testing.T) builtin.Options {
		return builtin.Options{Dir: t.TempDir()}
	})
}
