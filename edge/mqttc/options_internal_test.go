package mqttc

import (
	"crypto/tls"
	"errors"
	"testing"
	"time"
)

func TestParseBrokerURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw      string
		want     string // normalised URL; "" means invalid
		redacted string // what error messages may show
	}{
		{raw: "tcp://127.0.0.1:1883", want: "tcp://127.0.0.1:1883"},
		{raw: "tcp://broker.lan", want: "tcp://broker.lan:1883"},
		{raw: "mqtt://broker.lan:1884", want: "mqtt://broker.lan:1884"},
		{raw: "TLS://broker.lan", want: "tls://broker.lan:8883"},
		{raw: "ssl://[::1]", want: "ssl://[::1]:8883"},
		{raw: "tcp://user:pw@broker.lan", want: "tcp://user:pw@broker.lan:1883", redacted: "tcp://user:xxxxx@broker.lan:1883"},
		{raw: ""},
		{raw: "broker.lan:1883"},
		{raw: "http://broker.lan"},
		{raw: "ws://broker.lan"},
		{raw: "tcp://:1883"},
		{raw: "tcp://bro ker"},
	}
	for _, tt := range tests {
		u, err := parseBrokerURL(tt.raw)
		if tt.want == "" {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("parseBrokerURL(%q) = %v, %v; want ErrInvalidOptions", tt.raw, u, err)
			}
			continue
		}
		if err != nil || u.String() != tt.want {
			t.Errorf("parseBrokerURL(%q) = %v, %v; want %s", tt.raw, u, err, tt.want)
			continue
		}
		if tt.redacted != "" && u.Redacted() != tt.redacted {
			t.Errorf("parseBrokerURL(%q).Redacted() = %s, want %s", tt.raw, u.Redacted(), tt.redacted)
		}
	}
}

func TestTLSConfigVerifiesByDefault(t *testing.T) {
	t.Parallel()
	o, _, err := Options{BrokerURL: "tls://broker.lan"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.TLSConfig == nil || o.TLSConfig.InsecureSkipVerify || o.TLSConfig.ServerName != "broker.lan" || o.TLSConfig.RootCAs != nil {
		t.Fatalf("default TLS config = %+v, want system roots, verification on, ServerName broker.lan", o.TLSConfig)
	}
	mine := &tls.Config{ServerName: "other.lan"}
	o, _, err = Options{BrokerURL: "ssl://broker.lan", TLSConfig: mine}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.TLSConfig == mine || o.TLSConfig.ServerName != "other.lan" {
		t.Fatalf("given TLS config not cloned or its ServerName overridden: %+v", o.TLSConfig)
	}
}

func TestReconnectJitter(t *testing.T) {
	tests := []struct {
		name      string
		jitter    time.Duration
		maxRetry  time.Duration
		want      time.Duration // the bound after defaults
		draw      int64         // what randN returns
		wantDelay time.Duration // jitter(bound) with that draw
	}{
		{"default", 0, 0, DefaultReconnectJitter, int64(DefaultReconnectJitter), DefaultReconnectJitter},
		{"own", 500 * time.Millisecond, 0, 500 * time.Millisecond, 7, 7},
		{"capped by max reconnect interval", 5 * time.Second, 100 * time.Millisecond, 100 * time.Millisecond, 3, 3},
		{"off", -1, 0, 0, 99, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _, err := Options{BrokerURL: "tcp://127.0.0.1:1", ReconnectJitter: tt.jitter, MaxReconnectInterval: tt.maxRetry}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			if o.ReconnectJitter != tt.want {
				t.Fatalf("ReconnectJitter = %v, want %v", o.ReconnectJitter, tt.want)
			}
			var asked int64
			// The first attempt after a loss waits the jitter (backoff.go).
			p := &pacer{jitter: o.ReconnectJitter, max: o.MaxReconnectInterval, now: time.Now, outage: time.Now(),
				randN: func(n int64) int64 { asked = n; return min(tt.draw, n-1) }}
			got := p.next()
			if tt.want > 0 && asked != int64(tt.want)+1 {
				t.Fatalf("randN asked for [0, %d), want [0, %d]", asked, tt.want)
			}
			if got != min(tt.wantDelay, tt.want) {
				t.Fatalf("jitter = %v, want %v", got, min(tt.wantDelay, tt.want))
			}
		})
	}
}
