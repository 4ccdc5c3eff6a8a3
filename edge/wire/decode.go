package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxMessageBytes is the largest MQTT payload evoclaw decodes. Larger
// messages are refused before parsing so that one peer cannot make a small
// board allocate without bound.
const MaxMessageBytes = 1 << 20

// MaxPacketBytes is the largest MQTT packet (its remaining length) that
// can carry a message evoclaw decodes: MaxMessageBytes and 64 KiB for the
// topic and the rest of the header. Clients read no larger packet from the
// broker (mqttc.Options.MaxPacketBytes).
const MaxPacketBytes = MaxMessageBytes + 1<<16

// MaxRequestIDLen bounds a request_id.
const MaxRequestIDLen = 128

// ErrTooLarge is returned for payloads over MaxMessageBytes.
var ErrTooLarge = errors.New("message too large")

// DecodeError describes a message that could not be decoded. What names the
// message kind, Field the offending field when known.
type DecodeError struct {
	What  string
	Field string
	Msg   string
	Err   error
}

func (e *DecodeError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("decode %s: field %q: %s", e.What, e.Field, e.Msg)
	}
	return fmt.Sprintf("decode %s: %s", e.What, e.Msg)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// decodeObject unmarshals one JSON object from b into v, translating the
// standard library's errors into DecodeErrors that name the field.
//
// Well-formed input, the common case, is decoded in place; only input that
// is not one well-formed JSON value goes through a stream decoder
// (decodeStream), which says what is wrong with it (trailing data, say) and
// accepts what it always accepted: the two answer alike for every input.
func decodeObject(what string, b []byte, v any) error {
	t, err := objectBytes(what, b)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(t, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// json.Unmarshal checks the whole input before it sets
			// anything, so v is as it was.
			return decodeStream(what, t, v)
		}
		return translate(what, err)
	}
	return nil
}

// objectBytes bounds b and trims it to what should be one JSON object.
func objectBytes(what string, b []byte) ([]byte, error) {
	if len(b) > MaxMessageBytes {
		return nil, &DecodeError{What: what, Msg: fmt.Sprintf("%d bytes, at most %d allowed", len(b), MaxMessageBytes), Err: ErrTooLarge}
	}
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return nil, &DecodeError{What: what, Msg: "empty message"}
	}
	if t[0] != '{' {
		return nil, &DecodeError{What: what, Msg: "want a JSON object"}
	}
	return t, nil
}

// decodeStream decodes the first JSON value of t into v with a stream
// decoder, and refuses anything after it but a closing bracket (which a
// stream decoder does not count as more data).
func decodeStream(what string, t []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(t))
	if err := dec.Decode(v); err != nil {
		return translate(what, err)
	}
	if dec.More() {
		return &DecodeError{What: what, Msg: "trailing data after the JSON object"}
	}
	return nil
}

func translate(what string, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return &DecodeError{What: what, Field: te.Field, Msg: fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value), Err: err}
	case errors.As(err, &se):
		return &DecodeError{What: what, Msg: fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, err), Err: err}
	default:
		return &DecodeError{What: what, Msg: err.Error(), Err: err}
	}
}

// objectOrEmpty checks that raw is absent, null or a JSON object and returns
// it normalised ("{}" for absent or null).
func objectOrEmpty(what, field string, raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' {
		return nil, &DecodeError{What: what, Field: field, Msg: "want a JSON object"}
	}
	return json.RawMessage(t), nil
}

// required is a DecodeError of what when the string field is empty.
func required(what, field, v string) error {
	if v == "" {
		return &DecodeError{What: what, Field: field, Msg: "required"}
	}
	return nil
}

// nonNegative is a DecodeError of what when the number field is below zero.
func nonNegative[N int | int64](what, field string, v N) error {
	if v < 0 {
		return &DecodeError{What: what, Field: field, Msg: "must not be negative"}
	}
	return nil
}

// firstErr returns the first of errs that is not nil: the checks of a
// message, in the order their fields are reported.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// decodePayload checks that r is a report of reportType and decodes its
// payload, one JSON object, into v.
func decodePayload(what string, r Report, reportType string, v any) error {
	if r.ReportType != reportType {
		return &DecodeError{What: what, Field: "report_type", Msg: fmt.Sprintf("want %q, got %q", reportType, r.ReportType)}
	}
	return decodeObject(what, r.Payload, v)
}

func checkRequestID(what, id string, required bool) error {
	switch {
	case id == "" && required:
		return &DecodeError{What: what, Field: "request_id", Msg: "required"}
	case len(id) > MaxRequestIDLen:
		return &DecodeError{What: what, Field: "request_id", Msg: fmt.Sprintf("%d bytes, at most %d allowed", len(id), MaxRequestIDLen)}
	}
	return nil
}
