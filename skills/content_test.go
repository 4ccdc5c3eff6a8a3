package skills

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

func TestOutputThroughTheWire(t *testing.T) {
	exit := 3
	tests := []struct {
		name string
		out  Output
	}{
		{"text", Output{Content: []Block{TextBlock("hi")}, Elapsed: 5 * time.Millisecond}},
		{"empty success", Output{}},
		{"failure with partial output", Output{Content: []Block{TextBlock("partial"), ErrorBlock(wire.ErrExecutionFailed, "exit 3")},
			ExitCode: &exit, Stderr: "boom"}},
		{"cut output", Output{Content: []Block{TextBlock("abc")}, Truncated: true, ResultBytes: 1 << 20}},
		{"timeout", Failed(wire.ErrTimeout, "no answer within 5s")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.out.Wire("tool")
			back := FromWire(w)
			if !reflect.DeepEqual(back.Wire("tool"), w) {
				t.Fatalf("wire %+v came back as %+v", w, back.Wire("tool"))
			}
			if back.Succeeded() != tt.out.Succeeded() || back.ErrorType() != tt.out.ErrorType() || back.ErrorText() != tt.out.ErrorText() ||
				back.Text() != tt.out.Text() {
				t.Fatalf("%+v came back as %+v", tt.out, back)
			}
		})
	}
}

func TestFromWireFailureWithoutDetails(t *testing.T) {
	o := FromWire(wire.ToolResult{Status: wire.StatusError})
	if o.Succeeded() || o.ErrorType() != wire.ErrExecutionFailed || o.ErrorText() == "" {
		t.Fatalf("%+v", o)
	}
	if o := FromWire(wire.ToolResult{Status: "weird", Result: "x"}); o.Succeeded() {
		t.Fatalf("an unknown status counts as success: %+v", o)
	}
}

// An image crosses the wire as an image; a text-only result sends no
// content blocks, so the public format is unchanged.
func TestImageThroughTheWire(t *testing.T) {
	out := Output{Content: []Block{TextBlock("snapshot"), ImageBlock("image/png", "iVBORw0KGgo=")}}
	w := out.Wire("camera")
	if len(w.Content) != 2 || !strings.Contains(w.Result, "image/png") {
		t.Fatalf("wire %+v", w)
	}
	back := FromWire(w)
	if len(back.Content) != 2 || back.Content[1].Kind != KindImage || back.Content[1].Data != "iVBORw0KGgo=" || back.Text() != out.Text() {
		t.Fatalf("came back as %+v", back)
	}
	if w := (Output{Content: []Block{TextBlock("plain")}}).Wire("t"); w.Content != nil {
		t.Fatalf("a text result carries content blocks: %+v", w)
	}
}
