package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
)

// streamEvent is any event of a Messages stream; fields by event type.
type streamEvent struct {
	Type         string            `json:"type"`
	Message      *messagesResponse `json:"message"`       // message_start
	Index        int               `json:"index"`         // content_block_*
	ContentBlock *respBlock        `json:"content_block"` // content_block_start
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"` // content_block_delta, message_delta
	Usage *httpc.Report[usage] `json:"usage"` // message_delta
	Error json.RawMessage      `json:"error"` // error
}

// blockCost is what a content block costs beyond its text, id and name,
// counted against the answer's bound (httpc.Events.Keep), so that a stream
// of empty blocks is bounded too.
const blockCost = 256

// readStream assembles a Messages event stream. A stream that ends before
// message_stop and before message_delta's stop_reason is a network
// failure: the answer may be cut. After the stop_reason every block is
// complete, and the stream may end without message_stop (see
// httpc.Events.Finishing).
func readStream(ctx context.Context, call *httpc.Call, r io.Reader) (llm.Response, error) {
	var (
		model   string
		respID  string
		blocks  []respBlock
		partial = map[int]*bytes.Buffer{}    // tool_use input JSON by block index
		texts   = map[int]*strings.Builder{} // text deltas by blocks index: += would copy the text at every delta
		index   = map[int]int{}              // stream index to blocks index
		stop    string
		u       usage
		done    bool
	)
	evs := call.Events(ctx, r)
	for ev, err := range evs.All() {
		if err != nil {
			return llm.Response{}, err
		}
		var e streamEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return llm.Response{}, call.Errorf(llm.KindMalformed, 200, err, "stream event is not a Messages event: %s", llm.Excerpt(string(ev.Data), 200))
		}
		switch e.Type {
		case "message_start":
			if e.Message != nil {
				model, respID = e.Message.Model, e.Message.ID
				if e.Message.Usage != nil {
					u = e.Message.Usage.V
				}
			}
		case "content_block_start":
			if e.ContentBlock == nil {
				return llm.Response{}, call.Errorf(llm.KindMalformed, 200, nil, "content_block_start %d without content_block", e.Index)
			}
			b := *e.ContentBlock
			if b.Type == "tool_use" {
				// The start carries "input": {}; the real input follows
				// as partial JSON.
				b.Input = nil
				partial[e.Index] = &bytes.Buffer{}
			}
			if err := evs.Keep(blockCost + len(b.Text) + len(b.ID) + len(b.Name)); err != nil {
				return llm.Response{}, err
			}
			index[e.Index] = len(blocks)
			blocks = append(blocks, b)
		case "content_block_delta":
			i, ok := index[e.Index]
			if !ok || e.Delta == nil {
				return llm.Response{}, call.Errorf(llm.KindMalformed, 200, nil, "content_block_delta for unknown block %d", e.Index)
			}
			switch e.Delta.Type {
			case "text_delta":
				if err := evs.Keep(len(e.Delta.Text)); err != nil {
					return llm.Response{}, err
				}
				tb := texts[i]
				if tb == nil {
					tb = &strings.Builder{}
					tb.WriteString(blocks[i].Text)
					texts[i] = tb
				}
				tb.WriteString(e.Delta.Text)
			case "input_json_delta":
				if buf := partial[e.Index]; buf != nil {
					if err := evs.Keep(len(e.Delta.PartialJSON)); err != nil {
						return llm.Response{}, err
					}
					buf.WriteString(e.Delta.PartialJSON)
				}
			}
		case "message_delta":
			if e.Delta != nil && e.Delta.StopReason != "" {
				stop = e.Delta.StopReason
				evs.Finishing() // every block is complete; message_stop may follow, or not
			}
			if e.Usage != nil {
				u.OutputTokens = e.Usage.V.OutputTokens
				if e.Usage.V.InputTokens > 0 {
					u.InputTokens = e.Usage.V.InputTokens
				}
			}
		case "message_stop":
			done = true
		case "error":
			return llm.Response{}, call.Errorf(streamErrorKind(ev.Data), 200, nil, "error in the stream: %s", llm.Excerpt(errorMessage(ev.Data), llm.MaxErrorExcerpt))
		}
		if done {
			break
		}
	}
	if !done && stop == "" {
		return llm.Response{}, call.Errorf(llm.KindNetwork, 200, io.ErrUnexpectedEOF, "stream ended before message_stop and without a stop_reason")
	}
	for i, tb := range texts {
		blocks[i].Text = tb.String()
	}
	for si, buf := range partial {
		blocks[index[si]].Input = json.RawMessage(buf.Bytes())
	}
	return finish(call, respID, model, blocks, stop, &u)
}
