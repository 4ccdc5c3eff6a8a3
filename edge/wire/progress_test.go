package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeProgressGolden(t *testing.T) {
	tests := []struct {
		file string
		want Progress
	}{
		{"report_progress.json", Progress{RequestID: "tool-1739635200000000000", Seq: 3, Stream: StreamStdout, Output: "downloaded 30 of 100 MB\n"}},
		{"report_progress_omitted.json", Progress{RequestID: "tool-1739635200000000000", Seq: 17,
			Output: "\n[… 99934464 bytes of output not streamed …]\n", Omitted: 99934464}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := goldenReport(t, tt.file)
			if r.ReportType != ReportProgress || r.RequestID() != tt.want.RequestID {
				t.Fatalf("envelope %+v request_id %q", r, r.RequestID())
			}
			p, err := DecodeProgress(r)
			if err != nil {
				t.Fatal(err)
			}
			if p != tt.want {
				t.Fatalf("got  %+v\nwant %+v", p, tt.want)
			}
		})
	}
}

func TestDecodeToolPayloadStreamOutput(t *testing.T) {
	for file, want := range map[string]bool{"command_tool_stream.json": true, "command_tool.json": false, "command_tool_spec.json": false} {
		c, err := DecodeCommand(golden(t, file))
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodeToolPayload(c.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if p.StreamOutput != want {
			t.Errorf("%s: StreamOutput %v, want %v", file, p.StreamOutput, want)
		}
	}
}

func TestEncodeProgressMatchesGolden(t *testing.T) {
	r, err := NewReport("alex-eye", "monitor", ReportProgress, 1739635201,
		Progress{RequestID: "tool-1739635200000000000", Seq: 3, Stream: StreamStdout, Output: "downloaded 30 of 100 MB\n"})
	if err != nil {
		t.Fatal(err)
	}
	assertEncodesAs(t, r, "report_progress.json")

	c, err := NewCommand(CmdTool, "tool-1739635200000000000", ToolPayload{Tool: "bash", Parameters: json.RawMessage(`{"command":"./download.sh"}`),
		TimeoutMS: 120000, RequestID: "tool-1739635200000000000", StreamOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	assertEncodesAs(t, c, "command_tool_stream.json")
	// A command without streaming encodes exactly as before: no
	// stream_output key, so the public agent sees its old format.
	plain, err := json.Marshal(ToolPayload{Tool: "bash"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "stream_output") {
		t.Fatalf("payload without streaming names the flag: %s", plain)
	}
}

func TestDecodeProgressRejects(t *testing.T) {
	prog := func(b []byte) error {
		r, err := DecodeReport("alex-eye", b)
		if err != nil {
			return err
		}
		_, err = DecodeProgress(r)
		return err
	}
	for file, field := range map[string]string{
		"report_progress_no_seq.json":        "seq",
		"report_progress_stream.json":        "stream",
		"report_progress_no_request_id.json": "request_id",
	} {
		err := prog(golden(t, "bad/"+file))
		var de *DecodeError
		if !errors.As(err, &de) || de.Field != field {
			t.Errorf("%s: err = %v, want a DecodeError on %q", file, err, field)
		}
	}
	big := `{"report_type":"progress","payload":{"request_id":"r","seq":1,"output":"` + strings.Repeat("a", MaxProgressOutput+1) + `"}}`
	var de *DecodeError
	if err := prog([]byte(big)); !errors.As(err, &de) || de.Field != "output" {
		t.Errorf("oversized output: err = %v", err)
	}
	neg := `{"report_type":"progress","payload":{"request_id":"r","seq":1,"output":"","omitted":-1}}`
	if err := prog([]byte(neg)); !errors.As(err, &de) || de.Field != "omitted" {
		t.Errorf("negative omitted: err = %v", err)
	}
	r := goldenReport(t, "report_tool_success.json")
	if _, err := DecodeProgress(r); !errors.As(err, &de) || de.Field != "report_type" {
		t.Errorf("a result decoded as progress: err = %v", err)
	}
}
