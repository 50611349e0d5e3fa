package lifecycle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxDocumentSize is the largest configuration document Parse reads, in bytes.
const MaxDocumentSize = 1 << 20

// maxDepth bounds nesting; a valid document needs 6 levels (wrapper, actions, stages, list,
// script, arguments or scriptSource).
const maxDepth = 64

// kind is a JSON value's type.
type kind int

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// String is the type's name as messages print it ("got boolean").
func (k kind) String() string {
	switch k {
	case kindBool:
		return "boolean"
	case kindNumber:
		return "number"
	case kindString:
		return "string"
	case kindArray:
		return "array"
	case kindObject:
		return "object"
	default:
		return "null"
	}
}

// value is one decoded JSON value that keeps object key order, repeated keys and where in the
// input it starts, so that problems can be reported in document order.
type value struct {
	kind    kind
	off     int64    // input offset at or just before the value
	end     int64    // input offset just after an object or array
	str     string   // kindString
	members []member // kindObject, in document order, repeated keys kept
	elems   []*value // kindArray
}

type member struct {
	key string
	off int64 // input offset at or just before the key
	val *value
}

// decodeTree reads data (already size-checked, BOM stripped) into a tree. A failure is
// reported as the detail of "$: invalid JSON: <detail>".
func decodeTree(data []byte) (*value, string) {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return nil, fmt.Sprintf("%s: invalid UTF-8", position(data, off))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	b := &treeBuilder{dec: dec}
	root, err := b.value(0)
	if err != nil {
		return nil, syntaxDetail(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, syntaxDetail(data, err) // data after the top-level value
	}
	return root, ""
}

type treeBuilder struct {
	dec *json.Decoder
}

// depthError is nesting beyond maxDepth.
type depthError struct{ off int64 }

func (e *depthError) Error() string { return fmt.Sprintf("nesting deeper than %d levels", maxDepth) }

func (b *treeBuilder) value(depth int) (*value, error) {
	off := b.dec.InputOffset()
	tok, err := b.dec.Token()
	if err != nil {
		return nil, err
	}
	v := &value{off: off}
	switch t := tok.(type) {
	case nil:
		v.kind = kindNull
	case bool:
		v.kind = kindBool
	case json.Number:
		v.kind = kindNumber
	case string:
		v.kind, v.str = kindString, t
	case json.Delim:
		if depth >= maxDepth {
			return nil, &depthError{off: off}
		}
		switch t {
		case '{':
			v.kind = kindObject
			for b.dec.More() {
				keyOff := b.dec.InputOffset()
				ktok, err := b.dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := ktok.(string)
				if !ok { // the decoder's state machine guarantees a string here
					return nil, &json.SyntaxError{Offset: b.dec.InputOffset()}
				}
				val, err := b.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.members = append(v.members, member{key: key, off: keyOff, val: val})
			}
		case '[':
			v.kind = kindArray
			for b.dec.More() {
				el, err := b.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.elems = append(v.elems, el)
			}
		}
		if _, err := b.dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		v.end = b.dec.InputOffset()
	}
	return v, nil
}

// syntaxDetail renders a decoder error with the line and column it happened at. The
// decoder's own offsets are relative to the value it was reading, so a syntax error is located
// again by encoding/json's whole-input check, whose offsets are absolute.
func syntaxDetail(data []byte, err error) string {
	var de *depthError
	if errors.As(err, &de) {
		off := int(de.off)
		for off < len(data) && (isJSONSpace(data[off]) || data[off] == ',' || data[off] == ':') {
			off++
		}
		return fmt.Sprintf("%s: %s", position(data, off), de.Error())
	}
	if len(bytes.Trim(data, " \t\r\n")) == 0 {
		return "empty document"
	}
	var raw json.RawMessage
	var se *json.SyntaxError
	if errors.As(json.Unmarshal(data, &raw), &se) {
		off := int(se.Offset) - 1 // Offset counts the bytes read, the offending one included
		if se.Error() == "unexpected end of JSON input" {
			off = len(data)
		}
		msg := se.Error()
		if coff, cause := likelyCause(data, off, msg); cause != "" {
			off, msg = coff, cause
		}
		return fmt.Sprintf("%s: %s", position(data, off), msg)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of JSON input"
	}
	return err.Error()
}

// position is "line L, column C" (1-based; the column counts runes) of byte offset off.
func position(data []byte, off int) string {
	off = max(0, min(off, len(data)))
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	col := 1 + utf8.RuneCount(data[start:off])
	return fmt.Sprintf("line %d, column %d", line, col)
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
