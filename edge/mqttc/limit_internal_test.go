package mqttc

import (
	"errors"
	"testing"
)

// header is a fixed header announcing n bytes (MQTT's variable-length
// integer), without a body.
func header(typ byte, n int) []byte {
	out := []byte{typ}
	for {
		b := byte(n % 128)
		if n /= 128; n > 0 {
			b |= 0x80
		}
		if out = append(out, b); n == 0 {
			return out
		}
	}
}

func packet(typ byte, n int) []byte { return append(header(typ, n), make([]byte, n)...) }

func TestPacketScanner(t *testing.T) {
	const limit = 300
	join := func(ps ...[]byte) (out []byte) {
		for _, p := range ps {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name   string
		stream []byte
		want   error
	}{
		{"nothing", nil, nil},
		{"empty bodies", join(packet(0xd0, 0), packet(0xc0, 0)), nil},
		{"at the bound", join(packet(0x20, 2), packet(0x30, limit)), nil},
		{"over it", join(packet(0x20, 2), header(0x30, limit+1)), ErrPacketTooLarge},
		{"a body that looks like a huge header", join(packet(0x30, 10)[:2], []byte{0x30, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0}, packet(0x40, 2)), nil},
		{"the largest MQTT allows", header(0x30, 268435455), ErrPacketTooLarge},
		{"a length of five bytes", []byte{0x30, 0x80, 0x80, 0x80, 0x80, 0x01}, errMalformedLength},
	}
	for _, tt := range tests {
		// Whole, then a byte at a time, as paho reads a header.
		for _, step := range []int{len(tt.stream) + 1, 1} {
			s := packetScanner{max: limit}
			var err error
			for b := tt.stream; len(b) > 0 && err == nil; b = b[min(step, len(b)):] {
				err = s.scan(b[:min(step, len(b))])
			}
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("%s, %d bytes a read: %v, want %v", tt.name, step, err, tt.want)
			}
		}
	}
}

// FuzzPacketScanner: how the broker's bytes are split into reads changes
// nothing; a stream of packets within the bound passes.
func FuzzPacketScanner(f *testing.F) {
	f.Add([]byte{0x20, 2, 0, 0, 0x30, 0xff, 0xff, 0xff, 0x7f}, 3, 1000)
	f.Add(append(header(0x30, 5000), make([]byte, 100)...), 1, 4096)
	f.Add([]byte{0x30, 0x80, 0x80, 0x80, 0x80, 0x01}, 2, 0)
	f.Fuzz(func(t *testing.T, stream []byte, split, limit int) {
		whole := packetScanner{max: max(limit, 0)}
		werr := whole.scan(stream)
		parts := packetScanner{max: max(limit, 0)}
		split = min(max(split, 0), len(stream))
		perr := parts.scan(stream[:split])
		if perr == nil {
			perr = parts.scan(stream[split:])
		}
		if (werr == nil) != (perr == nil) {
			t.Fatalf("whole: %v, split at %d: %v", werr, split, perr)
		}
		if werr == nil && whole != parts {
			t.Fatalf("whole ends in %+v, split in %+v", whole, parts)
		}
	})
}
