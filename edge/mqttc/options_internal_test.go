package mqttc

import (
	"crypto/tls"
	"errors"
	"testing"
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
