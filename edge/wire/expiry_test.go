package wire

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestSetExpiry(t *testing.T) {
	now := time.UnixMilli(1_739_635_200_000)
	tests := []struct {
		name          string
		timeout       time.Duration
		margin        time.Duration
		wantExpiresAt int64
		wantTTL       int64
	}{
		{"default margin", 30 * time.Second, 0, 1_739_635_200_000 + 35_000, 35_000},
		{"own margin", 30 * time.Second, time.Second, 1_739_635_200_000 + 31_000, 31_000},
		{"no timeout: no expiry", 0, 0, 0, 0},
		{"negative timeout: no expiry", -time.Second, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Command{Command: CmdPing, RequestID: "r", ExpiresAt: 99, TTLMS: 99}
			c.SetExpiry(now, tt.timeout, tt.margin)
			if c.ExpiresAt != tt.wantExpiresAt || c.TTLMS != tt.wantTTL {
				t.Fatalf("SetExpiry: expires_at %d ttl_ms %d, want %d and %d", c.ExpiresAt, c.TTLMS, tt.wantExpiresAt, tt.wantTTL)
			}
		})
	}
}

// TestExpiryOnTheWire checks that the fields travel, and that a command
// without them still decodes (other orchestrators do not send them).
func TestExpiryOnTheWire(t *testing.T) {
	c, err := DecodeCommand(golden(t, "command_tool_expiry.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ExpiresAt != 1739635235000 || c.TTLMS != 35000 {
		t.Fatalf("decoded expires_at %d ttl_ms %d", c.ExpiresAt, c.TTLMS)
	}
	plain, err := DecodeCommand(golden(t, "command_tool.json"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.ExpiresAt != 0 || plain.TTLMS != 0 {
		t.Fatalf("command without expiry decoded with expires_at %d ttl_ms %d", plain.ExpiresAt, plain.TTLMS)
	}
	b, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"expires_at", "ttl_ms"} {
		if _, ok := m[k]; ok {
			t.Errorf("command without expiry encodes %q: %s", k, b)
		}
	}
	_, err = DecodeCommand(golden(t, filepath.Join("bad", "command_negative_expiry.json")))
	var de *DecodeError
	if !errors.As(err, &de) || de.Field != "expires_at" {
		t.Fatalf("negative expires_at: err = %v, want a DecodeError on expires_at", err)
	}
	if !ErrExpired.Known() {
		t.Fatal("ErrExpired is not Known")
	}
}
