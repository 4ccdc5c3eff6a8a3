package broker

import (
	"context"
	"log/slog"
	"slices"
	"testing"
)

// levels is a slog.Handler that records the level of every record it takes.
type levels struct {
	min slog.Level
	got *[]slog.Level
}

func (h levels) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }
func (h levels) Handle(_ context.Context, r slog.Record) error {
	*h.got = append(*h.got, r.Level)
	return nil
}
func (h levels) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h levels) WithGroup(string) slog.Handler      { return h }

func TestDemoteInfo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		min  slog.Level
		want []slog.Level
	}{
		{"debug logger sees everything, info demoted", slog.LevelDebug, []slog.Level{slog.LevelDebug, slog.LevelDebug, slog.LevelWarn, slog.LevelError}},
		{"info logger sees only problems", slog.LevelInfo, []slog.Level{slog.LevelWarn, slog.LevelError}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []slog.Level
			log := slog.New(demoteInfo{levels{min: tt.min, got: &got}}).With("k", "v").WithGroup("g")
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Error("e")
			if !slices.Equal(got, tt.want) {
				t.Fatalf("levels = %v, want %v", got, tt.want)
			}
		})
	}
}
