package tomlconf

import (
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// A Duration key takes a Go duration string, names the form it wants when
// given anything else, and writes back the string it read.
func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want time.Duration
		err  string
	}{
		{`d = "90s"`, 90 * time.Second, ""},
		{`d = "1h30m"`, 90 * time.Minute, ""},
		{`d = "-2s"`, -2 * time.Second, ""},
		{`d = "ten minutes"`, 0, `want a duration like "90s"`},
		{`d = "30"`, 0, "missing unit"},
	} {
		var v struct {
			D Duration `toml:"d"`
		}
		if testenv.WantErr(t, Decode(tc.src, &v), tc.err) {
			continue
		}
		if v.D.Duration != tc.want {
			t.Errorf("%s: %v, want %v", tc.src, v.D, tc.want)
			continue
		}
		if b, err := v.D.MarshalText(); err != nil || string(b) != tc.want.String() {
			t.Errorf("%s: MarshalText = %s, %v", tc.src, b, err)
		}
	}
}

// TestDecodeRefusesBareDurations: a number given to a key decoded into a
// plain time.Duration is refused, naming the key, wherever the key sits
// (table, inline table, array of tables, map) and once however often an
// array of tables repeats it; a duration string, zero and a number for an
// integer key decode. Before, the decoder took the number
// as nanoseconds: `[audit.retention] max_age = 3600` deleted the whole
// audit trail at the node's start.
func TestDecodeRefusesBareDurations(t *testing.T) {
	type retention struct {
		MaxAge time.Duration `toml:"max_age"`
		Batch  int           `toml:"batch"`
	}
	type conf struct {
		Interval  time.Duration `toml:"retention_interval"`
		Retention retention     `toml:"retention"`
		Runs      []retention   `toml:"runs"`
		ByName    map[string]*retention
		Wrapped   Duration `toml:"wrapped"`
	}
	tests := []struct {
		src  string
		want string // "" decodes
	}{
		{"retention_interval = \"1h\"\n[retention]\nmax_age = \"24h\"\nbatch = 100\n", ""},
		{"[retention]\nmax_age = 3600\n", "retention.max_age: a number"},
		{"retention = { max_age = 60, batch = 5 }\n", "retention.max_age: a number"},
		{"[[runs]]\nmax_age = \"1m\"\n[[runs]]\nmax_age = 7\n", "runs.max_age: a number"},
		{"[byname.x]\nMAX_AGE = 1\n", "byname.x.MAX_AGE: a number"},
		{"retention_interval = 5\n[retention]\nmax_age = 3600\n", "retention_interval, retention.max_age: a number"},
		{"retention_interval = \"1h\"\n[retention]\nmax_age = \"24h\"\nbatch = 100\n[[runs]]\nmax_age = 0\n[[runs]]\nmax_age = 0\n", ""},
		{"[[runs]]\nmax_age = 0\n[[runs]]\nmax_age = 2\n[[runs]]\nmax_age = 3\n", "; write a duration"},
		{"wrapped = 30\n", "want a duration like"},
	}
	for _, tt := range tests {
		var c conf
		err := Decode(tt.src, &c)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.src, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: err = %v, want it to contain %q", tt.src, err, tt.want)
		case err != nil && strings.Count(err.Error(), "max_age") > 1:
			t.Errorf("%q: err = %v names a key twice", tt.src, err)
		case tt.want == "" && (c.Interval != time.Hour || c.Retention.MaxAge != 24*time.Hour || c.Retention.Batch != 100):
			t.Errorf("%q decoded as %+v", tt.src, c)
		}
	}
}
