package orchestrator

import (
	"testing"
	"time"
)

func TestInboundAndBudgetConfig(t *testing.T) {
	tests := []struct {
		name, toml, want string // want: substring of the error; "" = valid
	}{
		{"all keys", "[inbound]\nmessages_per_second = 10\nmessage_burst = 20\nbytes_per_second = 4096\nbyte_burst = 2097152\n" +
			"events_per_window = 5\nevent_window = \"5m\"\nexcerpt_bytes = 64\n[audit]\ndisk_budget_mb = 64\n[audit.retention]\nevent_max_age = \"240h\"\n", ""},
		{"negative quota", "[inbound]\nevents_per_window = -1\n", "must not be negative"},
		{"typo", "[inbound]\nmessages_per_sec = 10\n", "messages_per_sec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := loadConfig(t, t.TempDir(), tt.toml, tt.want)
			if !ok {
				return
			}
			if c.Inbound.MessagesPerSecond != 10 || c.Inbound.ByteBurst != 2<<20 || c.Inbound.EventWindow.Duration != 5*time.Minute ||
				c.Audit.DiskBudgetMB != 64 || c.Audit.Retention.EventMaxAge != 240*time.Hour {
				t.Fatalf("decoded %+v %+v", c.Inbound, c.Audit)
			}
		})
	}
}
