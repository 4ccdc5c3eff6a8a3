package testenv

import "testing"

func TestRecorded(t *testing.T) {
	t.Parallel()
	var r Recorded[int]
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 100 {
				r.Add(g*100 + i)
			}
		}()
	}
	for range 4 {
		<-done
	}
	got := r.All()
	if len(got) != 400 {
		t.Fatalf("%d items recorded, want 400", len(got))
	}
	got[0] = -1 // a copy: the recorder keeps its own
	if r.All()[0] == -1 {
		t.Fatal("All returned the recorder's own slice")
	}
}
