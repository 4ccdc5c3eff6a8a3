package tomlconf

import (
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
