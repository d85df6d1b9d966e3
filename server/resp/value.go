package resp

import (
	"errors"
	"strconv"
)

// maxReplyDepth bounds aggregate nesting in replies. Real replies nest a few
// levels; the bound keeps a hostile peer from exhausting the stack.
const maxReplyDepth = 512

// Value is one parsed reply. Type is the RESP type byte and says which
// fields are meaningful:
//
//	'+' simple string   Str
//	'-' error           Err
//	':' integer         Int
//	'$' bulk string     Str, or Null for RESP2's "$-1"
//	'*' array           Array, or Null for RESP2's "*-1"
//	'_' null (RESP3)    Null
//	',' double          Float (also "inf", "-inf", "nan")
//	'#' boolean         Int: 1 for true, 0 for false
//	'(' big number      Str: the decimal digits as sent
//	'=' verbatim string Str: the text after its "xxx:" format prefix
//	'!' blob error      Err
//	'%' map             Array: key, value, key, value, ...
//	'~' set             Array
//	'>' push            Array
//
// A RESP3 attribute ('|') is parsed and dropped: the Value is the reply it
// annotates. Streamed RESP3 strings and aggregates ("$?", "*?") are not
// supported; Redis never sends them.
//
// Str aliases the Reader's buffer and is valid only until the next read on
// it; Err and Array are owned by the caller.
type Value struct {
	Type  byte
	Str   []byte
	Int   int64
	Float float64
	Array []Value
	Null  bool
	Err   string
}

// ReadValue reads one complete reply of any RESP2 or RESP3 type. Limits
// apply as for requests: MaxBulkLen to string lengths, MaxMultibulkLen to
// aggregate lengths, MaxInlineLen to simple lines. Errors are reported as
// for ReadCommand; a reply of type '-' is a Value, not an error.
func (r *Reader) ReadValue() (Value, error) {
	if r.fatal != nil {
		return Value{}, r.fatal
	}
	r.release()
	for {
		end, need, err := r.frameValue()
		if err == nil && end > 0 {
			var v Value
			v, _, err = buildValue(r.buf[r.r:r.r+end], 0)
			if err == nil {
				r.consume(end)
				return v, nil
			}
		}
		if err != nil {
			r.fatal = err
			return Value{}, err
		}
		if err := r.fill(need); err != nil {
			return Value{}, err
		}
	}
}

// frameValue finds where the reply in progress ends without building it, so
// that a large reply trickling in is scanned once rather than re-parsed on
// every read. It returns the reply's length once complete, else the bytes
// it is known to need (0 when unknown).
func (r *Reader) frameValue() (end, need int, err error) {
	data := r.buf[r.r:r.w]
	if r.mode == 0 {
		if len(data) == 0 {
			return 0, 0, nil
		}
		r.mode = 'v'
		r.stack = r.stack[:0]
	}
	for {
		if r.bulkLen >= 0 {
			if int64(len(data)-r.pos)-2 < r.bulkLen {
				return 0, r.pos + int(r.bulkLen) + 2, nil
			}
			r.pos += int(r.bulkLen) + 2
			r.bulkLen = -1
		} else {
			cr, err := r.replyLine(data)
			if cr < 0 {
				return 0, 0, err
			}
			t, body := data[r.pos], data[r.pos+1:cr]
			r.pos = cr + 2
			switch t {
			case '+', '-', ':', ',', '#', '(', '_':
			case '$', '!', '=':
				n, ok := parseInt(body)
				if !ok || n < -1 || n == -1 && t != '$' || n > r.lim.MaxBulkLen {
					return 0, 0, &ProtocolError{Msg: msgInvalidBulkLen}
				}
				if n >= 0 {
					r.bulkLen = n
					continue
				}
			case '*', '~', '>', '%', '|':
				n, ok := parseInt(body)
				if !ok || n < -1 || n == -1 && t != '*' || n > r.lim.MaxMultibulkLen {
					return 0, 0, &ProtocolError{Msg: msgInvalidMultibulkLen}
				}
				if t == '%' || t == '|' {
					n *= 2
				}
				if t == '|' {
					n++ // the annotated reply follows the attribute's pairs
				}
				if n > 0 {
					if len(r.stack) >= maxReplyDepth {
						return 0, 0, &ProtocolError{Msg: msgReplyNestingTooDeep}
					}
					r.stack = append(r.stack, n)
					continue
				}
			default:
				return 0, 0, unknownReplyType(t)
			}
		}
		// One element is complete; close every aggregate it completes.
		for {
			top := len(r.stack) - 1
			if top < 0 {
				return r.pos, 0, nil
			}
			if r.stack[top]--; r.stack[top] > 0 {
				break
			}
			r.stack = r.stack[:top]
		}
	}
}

// replyLine returns the offset of the CRLF ending the line at r.pos, or -1
// when more input is needed. Replies, unlike requests, must use CRLF
// exactly: a client has no reason to be lenient with a server.
func (r *Reader) replyLine(data []byte) (int, error) {
	cr, err := r.seek(data, r.pos, '\r', msgTooBigReplyLine)
	switch {
	case cr < 0:
		return -1, err
	case cr == r.pos:
		return -1, unknownReplyType('\r')
	case cr+1 >= len(data):
		return -1, nil
	case data[cr+1] != '\n':
		return -1, &ProtocolError{Msg: msgInvalidReplyLine}
	}
	return cr, nil
}

// buildValue decodes the reply starting at data[pos], which frameValue has
// already delimited, and returns it with the offset after it. It checks
// what framing does not: number syntax, payload terminators, literals.
func buildValue(data []byte, pos int) (Value, int, error) {
	cr := pos
	for data[cr] != '\r' {
		cr++
	}
	v := Value{Type: data[pos]}
	body, next := data[pos+1:cr], cr+2
	switch v.Type {
	case '+', '(':
		v.Str = body
	case '-':
		v.Err = string(body)
	case ':':
		n, ok := parseInt(body)
		if !ok {
			return v, 0, &ProtocolError{Msg: msgInvalidInteger}
		}
		v.Int = n
	case ',':
		// An out-of-range literal still yields ±Inf or ±0, the nearest
		// double, which is what the peer meant.
		f, err := strconv.ParseFloat(string(body), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return v, 0, &ProtocolError{Msg: msgInvalidDouble}
		}
		v.Float = f
	case '#':
		switch string(body) {
		case "t":
			v.Int = 1
		case "f":
		default:
			return v, 0, &ProtocolError{Msg: msgInvalidBoolean}
		}
	case '_':
		if len(body) != 0 {
			return v, 0, &ProtocolError{Msg: msgInvalidReplyLine}
		}
		v.Null = true
	case '$', '!', '=':
		n, _ := parseInt(body)
		if n < 0 {
			v.Null = true
			return v, next, nil
		}
		payload := data[next : next+int(n)]
		next += int(n) + 2
		if data[next-2] != '\r' || data[next-1] != '\n' {
			return v, 0, &ProtocolError{Msg: msgInvalidBulkTerm}
		}
		switch v.Type {
		case '$':
			v.Str = payload
		case '!':
			v.Err = string(payload)
		case '=':
			if len(payload) < 4 || payload[3] != ':' {
				return v, 0, &ProtocolError{Msg: msgInvalidVerbatim}
			}
			v.Str = payload[4:]
		}
	default: // '*', '~', '>', '%', '|'
		n, _ := parseInt(body)
		if n < 0 {
			v.Null = true
			return v, next, nil
		}
		if v.Type == '%' || v.Type == '|' {
			n *= 2
		}
		if v.Type == '|' {
			for range n {
				var err error
				if _, next, err = buildValue(data, next); err != nil {
					return v, 0, err
				}
			}
			return buildValue(data, next)
		}
		v.Array = make([]Value, n)
		for i := range v.Array {
			var err error
			if v.Array[i], next, err = buildValue(data, next); err != nil {
				return v, 0, err
			}
		}
	}
	return v, next, nil
}

// AppendCommand appends args to dst as a RESP array of bulk strings, the
// form every Redis client sends, and returns the extended slice.
func AppendCommand(dst []byte, args ...[]byte) []byte {
	dst = appendHeader(dst, '*', int64(len(args)))
	for _, a := range args {
		dst = appendHeader(dst, '$', int64(len(a)))
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

func appendHeader(dst []byte, prefix byte, n int64) []byte {
	dst = append(dst, prefix)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}
