package mcptools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Bounds on one message a server sends, checked as it arrives, before the
// SDK holds or decodes it. The SDK's decoding of a call's result costs far
// more than its bytes: a 15 MB result took the agent from 35 MB to 145 MB,
// though the model is shown 64 KiB of it.
const (
	// MaxResultBytes bounds one message of a server other than a page of
	// its tool list (MaxListPage): the answer to a call above all. It is
	// what a skill tool's output is kept to (proc.DefaultMaxOutput) and
	// what one MQTT packet of the agent's carries. A larger answer is read
	// without being kept and the call fails with ErrResultTooLarge; a
	// larger notification or request of the server is dropped.
	MaxResultBytes = 1 << 20
	// MaxMessageBytes bounds what is read of one message past its bound:
	// a server still sending the same message after that many bytes
	// (one that never ends its line) has its session ended, and the call
	// waiting for that message fails with ErrResultTooLarge.
	MaxMessageBytes = 256 << 20
)

// ErrResultTooLarge means a server answered a call with more than
// MaxResultBytes.
var ErrResultTooLarge = errors.New("mcp result too large")

// ErrMessageTooLarge ends the session of a server that sent one message
// of more than MaxMessageBytes, or ends the answer of an HTTP server that
// split one message of more than twice MaxResultBytes across the lines
// of an event.
var ErrMessageTooLarge = errors.New("mcp message too large")

// codeResultTooLarge is the JSON-RPC error code an answer that frameReader
// refuses is replaced with; resultTooLarge turns it into ErrResultTooLarge.
const codeResultTooLarge = -32098

// codeNotMessage is the JSON-RPC error code a stdio server's line that is
// not a JSON-RPC message but names the id of an answer is replaced with
// (frameReader.messages).
const codeNotMessage = -32097

// resultTooLarge returns err as ErrResultTooLarge when it is the error an
// answer frameReader refused was replaced with, and nil otherwise.
func resultTooLarge(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) && we.Code == codeResultTooLarge {
		return fmt.Errorf("%w: %s", ErrResultTooLarge, we.Message)
	}
	return nil
}

// frameReader hands on a stream of newline-delimited messages (a stdio
// server's output, the lines of an event stream) with each line bounded
// by limit as it arrives. A longer line is not kept: it is read on, its
// size counted and its top-level "id" picked out (topScanner), and it is
// replaced by an error answer to that id saying how large it was. A line
// without an id, or one that is a request or notification (it has a
// "method"), is dropped. Past MaxMessageBytes the line is answered as too
// large without end and reading fails with ErrMessageTooLarge.
//
// With a prefix ("data:" for an event stream), only lines that start
// with it carry messages: the prefix is kept on a replacement and left
// out of the scan; other lines past the bound are dropped. An event (the
// lines up to a blank one) whose lines handed on come to more than twice
// the bound, a message split across many data lines, fails the stream
// with ErrMessageTooLarge, as the reader of the event would hold it
// whole. Whole, the stream is one message (an HTTP answer in JSON),
// newlines and all.
type frameReader struct {
	r      io.Reader
	limit  func() int // the bound of a line, asked when the line starts
	prefix []byte
	whole  bool
	// messages, set for a stdio server's output, hands on only the lines
	// that are JSON-RPC messages, trimmed of spaces around them: the SDK
	// ends the session at the first line it cannot decode, and a server
	// that writes one log line to its standard output (a print left in,
	// a library's banner) would lose every call in flight and be
	// restarted. Any other line is replaced by an error answer to its id
	// when one can be picked out (a broken answer), else dropped.
	messages bool
	// dropped, when set, is told of each line messages left out or
	// replaced, and why.
	dropped func(line []byte, err error)
	// answers, when hasAnswers, is the id of the request a whole answer
	// (an HTTP response) answers: one that is not a message is replaced
	// by an error answer to it even when no id can be picked out of it.
	answers    jsonrpc.ID
	hasAnswers bool

	buf  []byte // what one Read of r brought
	out  []byte // lines ready for the reader
	line []byte // the line so far while within its bound
	max  int    // the bound of the current line; 0 before it starts
	over bool   // the current line went past max
	size int64  // bytes of the current line when over
	// event counts the bytes of the current event handed on, with a
	// prefix (an event stream).
	event int
	scan  topScanner
	err   error // of r, or ErrMessageTooLarge; returned once out is empty
}

// keptRoom is the most room frameReader keeps for its next line.
const keptRoom = 64 << 10

func newFrameReader(r io.Reader, limit func() int, prefix string) *frameReader {
	return &frameReader{r: r, limit: limit, prefix: []byte(prefix), buf: make([]byte, 32<<10)}
}

func (f *frameReader) Read(p []byte) (int, error) {
	for len(f.out) == 0 && f.err == nil {
		n, err := f.r.Read(f.buf[:cap(f.buf)])
		f.err = err
		f.take(f.buf[:n])
		if f.err == io.EOF && f.max > 0 {
			f.end() // a last line without a newline
		}
	}
	if len(f.out) == 0 {
		return 0, f.err
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	if len(f.out) == 0 && cap(f.out) > keptRoom {
		f.out = nil // the room of a long line is not kept
	}
	return n, nil
}

// take looks at b, what was read.
func (f *frameReader) take(b []byte) {
	for len(b) > 0 {
		if f.max == 0 {
			f.max = f.limit()
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 || f.whole {
			f.add(b)
			return
		}
		f.add(b[:i])
		if errors.Is(f.err, ErrMessageTooLarge) {
			return
		}
		f.end()
		b = b[i+1:]
	}
}

// add adds part of the current line.
func (f *frameReader) add(chunk []byte) {
	if errors.Is(f.err, ErrMessageTooLarge) {
		return
	}
	if !f.over {
		if len(f.line)+len(chunk) <= f.max {
			f.line = append(f.line, chunk...)
			return
		}
		f.over, f.size = true, int64(len(f.line))
		f.scan = topScanner{prefix: f.prefix}
		f.scan.feed(f.line)
		f.line = nil
	}
	f.size += int64(len(chunk))
	f.scan.feed(chunk)
	if f.size > MaxMessageBytes {
		f.refuse(fmt.Sprintf("an answer of more than %d bytes without an end; the session is ended", MaxMessageBytes))
		f.err = ErrMessageTooLarge
	}
}

// end ends the current line.
func (f *frameReader) end() {
	switch {
	case f.over:
		f.refuse(fmt.Sprintf("an answer of %d bytes, more than %d", f.size, f.max))
	case f.messages:
		f.message(f.line)
	default:
		f.out = append(append(f.out, f.line...), '\n')
	}
	if len(f.prefix) > 0 {
		f.countEvent()
	}
	if cap(f.line) > keptRoom {
		f.line = nil
	}
	f.line, f.max, f.over, f.size = f.line[:0], 0, false, 0
}

// countEvent adds the line that ended to its event, which a blank line
// ends; f.max is still the line's bound.
func (f *frameReader) countEvent() {
	if !f.over && len(bytes.TrimSuffix(f.line, []byte("\r"))) == 0 {
		f.event = 0
		return
	}
	if f.event += len(f.line) + 1; f.event > 2*f.max && f.err == nil {
		f.err = fmt.Errorf("%w: an event of more than %d bytes", ErrMessageTooLarge, 2*f.max)
	}
}

// message hands on line, within its bound, when it is a JSON-RPC message
// (or a batch of them) as the SDK decodes one; any other line is replaced
// by an error answer to the id it names, if any, or dropped.
func (f *frameReader) message(line []byte) {
	line = bytes.TrimSpace(line)
	err := lineMessage(line)
	if err == nil {
		if len(line) > 0 {
			f.out = append(append(f.out, line...), '\n')
		}
		return
	}
	if f.dropped != nil {
		f.dropped(line, err)
	}
	f.scan = topScanner{}
	f.scan.feed(line)
	msg := notMessage(line, err)
	if _, ok := f.scan.answerID(); !ok && f.hasAnswers {
		if b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: f.answers, Error: &jsonrpc.Error{Code: codeNotMessage, Message: msg}}); err == nil {
			f.out = append(append(f.out, b...), '\n')
		}
		return
	}
	f.answer(codeNotMessage, msg)
}

// notMessage is the error a line that is not a message, for err, is
// replaced with.
func notMessage(line []byte, err error) string {
	return fmt.Sprintf("the server's answer is not a JSON-RPC message (a line of %d bytes): %v; it starts %.60q",
		len(line), err, bytes.ToValidUTF8(line[:min(len(line), 60)], nil))
}

// lineMessage returns why line, trimmed, is not what the SDK's stdio
// reader decodes without ending the session: one JSON value, a message
// or an array (a batch, which the SDK judges itself).
func lineMessage(line []byte) error {
	if len(line) == 0 {
		return nil
	}
	var v json.RawMessage // checked, not decoded
	if err := json.Unmarshal(line, &v); err != nil {
		return err
	}
	if line[0] == '[' {
		return nil
	}
	_, err := jsonrpc.DecodeMessage(line)
	return err
}

// refuse puts in out, for a line past its bound, the error answer that
// replaces it, or nothing when it is not an answer.
func (f *frameReader) refuse(msg string) {
	f.answer(codeResultTooLarge, msg)
}

// answer puts in out an error answer of code and msg to the id f.scan
// picked out of a line, or nothing when the line is not an answer.
func (f *frameReader) answer(code int64, msg string) {
	id, ok := f.scan.answerID()
	if !ok {
		return
	}
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		return
	}
	f.out = append(append(append(f.out, f.prefix...), b...), '\n')
}

// droppedLines returns what a stdio server's frameReader tells of the
// lines it left out: logged with the start of the line at the 1st, 2nd,
// 4th, 8th... of a session, so a server that prints without end writes a
// line to the log each time its count doubles, not one per line.
func droppedLines(log *slog.Logger) func([]byte, error) {
	if log == nil {
		return nil
	}
	var n int // lines left out; the frameReader is read by one goroutine
	return func(line []byte, err error) {
		if n++; n&(n-1) != 0 {
			return
		}
		const shown = 120
		start := line[:min(len(line), shown)]
		log.Warn("MCP server wrote a line that is not a JSON-RPC message to its standard output; left out",
			"lines", n, "bytes", len(line), "start", string(bytes.ToValidUTF8(start, nil)), "err", err)
	}
}
