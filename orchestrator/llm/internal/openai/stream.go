package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
)

// streamCall is a tool call being assembled from deltas.
type streamCall struct {
	id, name string
	args     bytes.Buffer
}

// assembler folds streamed chunks into one answer.
type assembler struct {
	respID, model string
	content       strings.Builder
	calls         []*streamCall
	byIndex       map[int]*streamCall
	reason        string
	usage         *httpc.Report[chatUsage]
	kept          int  // bytes of the answer kept so far (text, calls)
	finished      bool // a finish_reason came: the stream is finishing
	premature     bool // answer came after a finish_reason: never finishing
}

// readStream reads a chat completions event stream to its end. A stream
// that stops before "data: [DONE]" and before any finish_reason is a
// network failure (the answer may be cut); one that has a finish_reason but
// no [DONE] is accepted, as some servers never send it.
func readStream(ctx context.Context, call *httpc.Call, r io.Reader) (llm.Response, error) {
	a := &assembler{byIndex: map[int]*streamCall{}}
	done := false
	evs := call.Events(ctx, r)
	for ev, err := range evs.All() {
		if err != nil {
			return llm.Response{}, err
		}
		data := bytes.TrimSpace(ev.Data)
		if string(data) == "[DONE]" {
			done = true
			break
		}
		before := a.kept
		if err := a.add(call, evs, data); err != nil {
			return llm.Response{}, err
		}
		switch {
		case a.premature:
		case a.finished && a.kept > before:
			// More of the answer after its finish_reason: this server
			// sends finish_reasons early.
			a.premature = true
			evs.Resume()
		case a.reason != "":
			a.finished = true
			evs.Finishing() // the usage and [DONE] may follow, or not
			if a.kept > before {
				// A finish_reason beside text may be one of a server
				// that sends them early: no grace, which could cut a
				// slow model's next token; the end marker, the end of
				// the body or the idle timeout ends the stream.
				evs.Resume()
			}
		}
	}
	if !done && a.reason == "" {
		return llm.Response{}, call.Errorf(llm.KindNetwork, 200, io.ErrUnexpectedEOF, "stream ended before [DONE] and without a finish_reason")
	}
	calls := make([]pendingCall, len(a.calls))
	for i, c := range a.calls {
		calls[i] = pendingCall{id: c.id, name: c.name, args: c.args.Bytes()}
	}
	return finish(call, a.respID, a.model, a.content.String(), calls, a.reason, a.usage)
}

// callCost is what a call being assembled costs beyond its id, name and
// arguments, counted against the answer's bound (Events.Keep), so that a
// stream of empty calls is bounded too.
const callCost = 256

// add folds one chunk; what it keeps is counted by evs.
func (a *assembler) add(call *httpc.Call, evs *httpc.Events, data []byte) error {
	var ch chatResponse
	if err := json.Unmarshal(data, &ch); err != nil {
		return call.Errorf(llm.KindMalformed, 200, err, "stream chunk is not a chat completion chunk: %s", llm.Excerpt(string(data), 200))
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return call.Errorf(llm.KindServer, 200, nil, "error in the stream: %s", llm.Excerpt(errorMessage(data), llm.MaxErrorExcerpt))
	}
	if ch.ID != "" {
		a.respID = ch.ID
	}
	if ch.Model != "" {
		a.model = ch.Model
	}
	if ch.Usage != nil {
		a.usage = ch.Usage
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue // we ask for one choice; ignore others
		}
		if r := finishReason(c.FinishReason); r != "" {
			a.reason = r
		}
		d := c.Delta
		if d == nil {
			d = c.Message // a server that repeats the whole message
		}
		if d == nil {
			continue
		}
		text, err := contentText(d.Content)
		if err != nil {
			return call.Errorf(llm.KindMalformed, 200, err, "stream delta content")
		}
		a.content.WriteString(text)
		kept := len(text)
		for _, tc := range d.ToolCalls {
			kept += a.addCall(tc)
		}
		if d.FunctionCall != nil {
			kept += a.addCall(respToolCall{Function: *d.FunctionCall})
		}
		a.kept += kept
		if err := evs.Keep(kept); err != nil {
			return err
		}
	}
	return nil
}

// addCall folds a tool-call delta into its call: by index when the server
// sends one, else by id, else a delta with a name starts a new call and one
// without continues the last. A delta whose id differs from that of the
// call at its index, once that call's arguments are complete JSON, starts
// a new call there: some servers (Ollama behind LiteLLM, Dynamo) number
// every parallel call 0, and their calls were merged into one with their
// arguments run together. It returns how many bytes the call grew by
// (callCost for a new one).
func (a *assembler) addCall(tc respToolCall) int {
	grown := 0
	var sc *streamCall
	switch {
	case tc.Index != nil:
		sc = a.byIndex[*tc.Index]
		if sc != nil && tc.ID != "" && sc.id != "" && string(tc.ID) != sc.id && json.Valid(sc.args.Bytes()) {
			sc = nil // another call under the same index
		}
	case tc.ID != "":
		for _, c := range a.calls {
			if c.id == string(tc.ID) {
				sc = c
			}
		}
	case tc.Function.Name == "" && len(a.calls) > 0:
		sc = a.calls[len(a.calls)-1]
	}
	if sc == nil {
		grown += callCost
		sc = &streamCall{}
		a.calls = append(a.calls, sc)
		if tc.Index != nil {
			a.byIndex[*tc.Index] = sc
		}
	}
	if sc.id == "" {
		sc.id = string(tc.ID)
		grown += len(sc.id)
	}
	if sc.name == "" {
		sc.name = tc.Function.Name
		grown += len(sc.name)
	}
	raw := bytes.TrimSpace(tc.Function.Arguments)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		text := llm.ArgumentText(raw)
		sc.args.Write(text)
		grown += len(text)
	default:
		// A whole JSON value in one delta (servers that send objects).
		sc.args.Reset()
		sc.args.Write(raw)
		grown += len(raw)
	}
	return grown
}
