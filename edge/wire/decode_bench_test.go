package wire

import (
	"os"
	"path/filepath"
	"testing"
)

// A decoded envelope is read once: BenchmarkDecodeReport is the cost the
// orchestrator pays per result it receives (envelope, request_id, result).
func BenchmarkDecodeReport(b *testing.B) {
	msg, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wire", "report_tool_success.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for range b.N {
		r, err := DecodeReport("alex-eye", msg)
		if err != nil {
			b.Fatal(err)
		}
		if r.RequestID() == "" {
			b.Fatal("no request_id")
		}
		if _, err := DecodeToolResult(r); err != nil {
			b.Fatal(err)
		}
	}
}
