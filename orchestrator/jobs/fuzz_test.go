package jobs

import (
	"testing"
	"time"
)

// Schedules come from config files, the API and the model: parsing never
// panics, and a schedule that parses always yields a later instant, and
// then another at least MinInterval after it.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"0 6 * * *", "@daily", "@every 15m", "CRON_TZ=Europe/Berlin 0 6 * * 1-5", "TZ=UTC */5 * * * *",
		"0 0 31 2 *", "@every 0s", "CRON_TZ=", "TZ= ", "* * * * * *", "0-59/0 * * * *",
		"TZ=UTC @every 1s", "CRON_TZ=UTC @every 2m", "*/100000 * * * *", "0 0 1 jan-dec/13 *", "5/55 * * * *",
		"CRON_TZ=Europe/Berlin 30 2 * * *", "CRON_TZ=Australia/Lord_Howe 0,15,30,45 2 * * *"} {
		f.Add(s)
	}
	// An ordinary day, and the eves of Europe's daylight saving changes.
	froms := []time.Time{time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC), time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC),
		time.Date(2026, 10, 24, 23, 0, 0, 0, time.UTC)}
	f.Fuzz(func(t *testing.T, s string) {
		sched, err := ParseSchedule(s)
		if err != nil {
			return
		}
		for _, from := range froms {
			next := sched.Next(from)
			if !next.After(from) {
				t.Fatalf("%q: next %v after %v", s, next, from)
			}
			if then := sched.Next(next); then.Sub(next) < MinInterval {
				t.Fatalf("%q: %v after %v, less than %v", s, then, next, MinInterval)
			}
		}
	})
}

// Job bodies come from the API and the model: decoding never panics, and
// what decodes compiles again from its own Spec.
func FuzzDecodeSpec(f *testing.F) {
	f.Add([]byte(`{"id": "m", "schedule": "0 6 * * *", "prompt": "p", "agents": ["pi-1"], "tools": ["{agent}__x"], "timeout": "5m", "missed": "skip"}`))
	f.Add([]byte(`{"id": "m", "schedule": "@every 1h", "prompt": "p", "catch_up_window": "2h"}`))
	f.Add([]byte(`{"id": 1}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := DecodeSpec(b)
		if err != nil {
			return
		}
		if _, err := Compile(j.Spec); err != nil {
			t.Fatalf("decoded spec does not compile again: %v", err)
		}
	})
}
