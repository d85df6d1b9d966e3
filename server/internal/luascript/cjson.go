package luascript

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// cjsonConfig is lua-cjson 2.1's settings, changed by the encode_* and
// decode_* functions.
type cjsonConfig struct {
	sparseConvert   bool
	sparseRatio     int
	sparseSafe      int
	encodeMaxDepth  int
	decodeMaxDepth  int
	precision       int
	encodeInvalidOK bool
	decodeInvalidOK bool
}

func defaultCjsonConfig() cjsonConfig {
	return cjsonConfig{sparseRatio: 2, sparseSafe: 10, encodeMaxDepth: 1000, decodeMaxDepth: 1000,
		precision: 14, decodeInvalidOK: true}
}

// cjsonLib is lua-cjson as Redis ships it: encode, decode, null and the
// configuration functions. Objects are encoded in the table's iteration
// order, which, as in Redis, is no particular order.
func (vm *VM) cjsonLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	null := L.NewUserData()
	t.RawSetString("null", null)
	cfg := &vm.cjson
	L.SetFuncs(t, map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				argError(L, 1, "encode", "expected 1 argument")
			}
			e := cjsonEncoder{L: L, cfg: cfg, null: null}
			e.value(L.Get(1), 0)
			L.Push(lua.LString(e.out))
			return 1
		},
		"decode": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				argError(L, 1, "decode", "expected 1 argument")
			}
			d := cjsonDecoder{L: L, cfg: cfg, null: null, s: L.CheckString(1)}
			L.Push(d.document())
			return 1
		},
		"encode_sparse_array": func(L *lua.LState) int {
			cfg.sparseConvert = optBool(L, 1, cfg.sparseConvert)
			cfg.sparseRatio = optInt(L, 2, cfg.sparseRatio, 0, math.MaxInt32)
			cfg.sparseSafe = optInt(L, 3, cfg.sparseSafe, 0, math.MaxInt32)
			L.Push(lua.LBool(cfg.sparseConvert))
			L.Push(lua.LNumber(cfg.sparseRatio))
			L.Push(lua.LNumber(cfg.sparseSafe))
			return 3
		},
		"encode_max_depth": func(L *lua.LState) int {
			cfg.encodeMaxDepth = optInt(L, 1, cfg.encodeMaxDepth, 1, math.MaxInt32)
			L.Push(lua.LNumber(cfg.encodeMaxDepth))
			return 1
		},
		"decode_max_depth": func(L *lua.LState) int {
			cfg.decodeMaxDepth = optInt(L, 1, cfg.decodeMaxDepth, 1, math.MaxInt32)
			L.Push(lua.LNumber(cfg.decodeMaxDepth))
			return 1
		},
		"encode_number_precision": func(L *lua.LState) int {
			cfg.precision = optInt(L, 1, cfg.precision, 1, 14)
			L.Push(lua.LNumber(cfg.precision))
			return 1
		},
		"encode_keep_buffer": func(L *lua.LState) int {
			// There is no buffer to keep; the setting is accepted.
			L.Push(lua.LBool(optBool(L, 1, true)))
			return 1
		},
		"encode_invalid_numbers": func(L *lua.LState) int {
			cfg.encodeInvalidOK = optBool(L, 1, cfg.encodeInvalidOK)
			L.Push(lua.LBool(cfg.encodeInvalidOK))
			return 1
		},
		"decode_invalid_numbers": func(L *lua.LState) int {
			cfg.decodeInvalidOK = optBool(L, 1, cfg.decodeInvalidOK)
			L.Push(lua.LBool(cfg.decodeInvalidOK))
			return 1
		},
	})
	return t
}

func optBool(L *lua.LState, n int, def bool) bool {
	switch v := L.Get(n).(type) {
	case *lua.LNilType:
		return def
	case lua.LBool:
		return bool(v)
	case lua.LString:
		switch v {
		case "on":
			return true
		case "off":
			return false
		}
	}
	L.ArgError(n, "invalid option")
	return def
}

func optInt(L *lua.LState, n, def, lo, hi int) int {
	if L.Get(n) == lua.LNil {
		return def
	}
	v := L.CheckInt(n)
	if v < lo || v > hi {
		L.ArgError(n, "expected integer between "+strconv.Itoa(lo)+" and "+strconv.Itoa(hi))
	}
	return v
}

type cjsonEncoder struct {
	L    *lua.LState
	cfg  *cjsonConfig
	null lua.LValue
	out  []byte
}

func (e *cjsonEncoder) fail(v lua.LValue, reason string) {
	e.L.RaiseError("Cannot serialise %s: %s", v.Type().String(), reason)
}

func (e *cjsonEncoder) value(v lua.LValue, depth int) {
	switch v := v.(type) {
	case *lua.LNilType:
		e.out = append(e.out, "null"...)
	case lua.LBool:
		e.out = strconv.AppendBool(e.out, bool(v))
	case lua.LNumber:
		e.number(v)
	case lua.LString:
		e.out = appendJSONString(e.out, string(v))
	case *lua.LTable:
		e.table(v, depth+1)
	default:
		if v == e.null {
			e.out = append(e.out, "null"...)
			return
		}
		e.fail(v, "type not supported")
	}
}

func (e *cjsonEncoder) number(n lua.LNumber) {
	f := float64(n)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		if !e.cfg.encodeInvalidOK {
			e.fail(n, "must not be NaN or Inf")
		}
		switch {
		case math.IsNaN(f):
			e.out = append(e.out, "nan"...)
		case f > 0:
			e.out = append(e.out, "inf"...)
		default:
			e.out = append(e.out, "-inf"...)
		}
		return
	}
	e.out = append(e.out, formatG(f, e.cfg.precision)...)
}

func (e *cjsonEncoder) table(t *lua.LTable, depth int) {
	if depth > e.cfg.encodeMaxDepth {
		e.L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
	}
	if n, ok := e.arrayLen(t); ok && n > 0 {
		e.out = append(e.out, '[')
		for i := 1; i <= n; i++ {
			if i > 1 {
				e.out = append(e.out, ',')
			}
			e.value(t.RawGetInt(i), depth)
		}
		e.out = append(e.out, ']')
		return
	}
	e.out = append(e.out, '{')
	first := true
	t.ForEach(func(k, v lua.LValue) {
		if !first {
			e.out = append(e.out, ',')
		}
		first = false
		switch k := k.(type) {
		case lua.LString:
			e.out = appendJSONString(e.out, string(k))
		case lua.LNumber:
			e.out = append(e.out, '"')
			e.out = append(e.out, formatG(float64(k), e.cfg.precision)...)
			e.out = append(e.out, '"')
		default:
			e.fail(k, "table key must be a number or string")
		}
		e.out = append(e.out, ':')
		e.value(v, depth)
	})
	e.out = append(e.out, '}')
}

// arrayLen is lua-cjson's array test: every key a positive integer, and
// not excessively sparse (which converts to an object only when
// encode_sparse_array allows it, and is otherwise an error).
func (e *cjsonEncoder) arrayLen(t *lua.LTable) (int, bool) {
	maxKey, items := 0.0, 0
	array := true
	t.ForEach(func(k, _ lua.LValue) {
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) < 1 || float64(n) != math.Floor(float64(n)) {
			array = false
			return
		}
		maxKey = max(maxKey, float64(n))
		items++
	})
	if !array {
		return 0, false
	}
	c := e.cfg
	if c.sparseRatio > 0 && maxKey > float64(items*c.sparseRatio) && maxKey > float64(c.sparseSafe) {
		if !c.sparseConvert {
			e.L.RaiseError("Cannot serialise table: excessively sparse array")
		}
		return 0, false
	}
	return int(maxKey), true
}

// formatG is C's "%.<prec>g".
func formatG(f float64, prec int) string {
	s := strconv.FormatFloat(f, 'g', prec, 64)
	mant, exp, hasExp := strings.Cut(s, "e")
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	if !hasExp {
		return mant
	}
	if len(exp) < 3 {
		exp = exp[:1] + "0" + exp[1:]
	}
	return mant + "e" + exp
}

// jsonEscapes are the bytes escaped with a letter, and the letter.
var jsonEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

// appendJSONString quotes s as lua-cjson does: '"', '\\' and '/' escaped,
// control characters and DEL as \b \f \n \r \t or \u00XX, other bytes
// as they are.
func appendJSONString(out []byte, s string) []byte {
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case jsonEscapes[c] != 0:
			out = append(out, '\\', jsonEscapes[c])
		case c < 0x20 || c == 0x7f:
			const hex = "0123456789abcdef"
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// cjsonDecoder parses JSON as lua-cjson does; its errors name the
// character (1-based) where the unexpected token starts.
type cjsonDecoder struct {
	L     *lua.LState
	cfg   *cjsonConfig
	null  lua.LValue
	s     string
	pos   int
	depth int
}

func (d *cjsonDecoder) document() lua.LValue {
	v := d.value("value")
	d.skipSpace()
	if d.pos < len(d.s) {
		d.expected("the end", d.tokenName())
	}
	return v
}

func (d *cjsonDecoder) expected(what, found string) {
	d.L.RaiseError("Expected %s but found %s at character %d", what, found, d.pos+1)
}

func (d *cjsonDecoder) skipSpace() {
	for d.pos < len(d.s) && strings.IndexByte(" \t\r\n", d.s[d.pos]) >= 0 {
		d.pos++
	}
}

// tokenName names the token at pos as lua-cjson's messages do.
func (d *cjsonDecoder) tokenName() string {
	if d.pos >= len(d.s) {
		return "T_END"
	}
	switch c := d.s[d.pos]; {
	case c == '{':
		return "T_OBJ_BEGIN"
	case c == '}':
		return "T_OBJ_END"
	case c == '[':
		return "T_ARR_BEGIN"
	case c == ']':
		return "T_ARR_END"
	case c == ':':
		return "T_COLON"
	case c == ',':
		return "T_COMMA"
	case c == '"':
		return "T_STRING"
	case c == '-' || (c >= '0' && c <= '9'):
		return "T_NUMBER"
	case strings.HasPrefix(d.s[d.pos:], "true"), strings.HasPrefix(d.s[d.pos:], "false"):
		return "T_BOOLEAN"
	case strings.HasPrefix(d.s[d.pos:], "null"):
		return "T_NULL"
	}
	return "invalid token"
}

func (d *cjsonDecoder) value(what string) lua.LValue {
	d.skipSpace()
	if d.pos >= len(d.s) {
		d.expected(what, "T_END")
	}
	rest := d.s[d.pos:]
	switch c := rest[0]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return lua.LString(d.str())
	case strings.HasPrefix(rest, "true"):
		d.pos += 4
		return lua.LTrue
	case strings.HasPrefix(rest, "false"):
		d.pos += 5
		return lua.LFalse
	case strings.HasPrefix(rest, "null"):
		d.pos += 4
		return d.null
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') || c == 'i' || c == 'I' || c == 'n' || c == 'N':
		return d.number(what)
	}
	d.expected(what, d.tokenName())
	return lua.LNil
}

func (d *cjsonDecoder) enter() {
	d.depth++
	if d.depth > d.cfg.decodeMaxDepth {
		d.L.RaiseError("Found too many nested data structures (%d) at character %d", d.depth, d.pos+1)
	}
}

func (d *cjsonDecoder) object() lua.LValue {
	t := d.L.NewTable()
	d.container('}', "object end", func() {
		d.skipSpace()
		if !d.at('"') {
			d.expected("object key string", d.tokenName())
		}
		k := d.str()
		d.skipSpace()
		if !d.at(':') {
			d.expected("colon", d.tokenName())
		}
		d.pos++
		t.RawSetString(k, d.value("value"))
	})
	return t
}

func (d *cjsonDecoder) array() lua.LValue {
	t := d.L.NewTable()
	i := 0
	d.container(']', "array end", func() {
		i++
		t.RawSetInt(i, d.value("value"))
	})
	return t
}

// container parses the elements of an object or an array, one elem call
// each, through the closing byte end.
func (d *cjsonDecoder) container(end byte, endName string, elem func()) {
	d.enter()
	d.pos++
	d.skipSpace()
	for first := true; !d.at(end); first = false {
		if !first {
			if !d.at(',') {
				d.expected("comma or "+endName, d.tokenName())
			}
			d.pos++
		}
		elem()
		d.skipSpace()
	}
	d.pos++
	d.depth--
}

// at reports whether the byte at pos is c.
func (d *cjsonDecoder) at(c byte) bool { return d.pos < len(d.s) && d.s[d.pos] == c }

func (d *cjsonDecoder) str() string {
	start := d.pos
	d.pos++
	var b strings.Builder
	for {
		if d.pos >= len(d.s) {
			d.pos = start
			d.expected("value", "unexpected end of string")
		}
		c := d.s[d.pos]
		if c == '"' {
			d.pos++
			return b.String()
		}
		if c != '\\' {
			b.WriteByte(c)
			d.pos++
			continue
		}
		if d.pos+1 >= len(d.s) {
			d.pos = start
			d.expected("value", "invalid escape code")
		}
		esc := d.s[d.pos+1]
		d.pos += 2
		switch esc {
		case '"', '\\', '/':
			b.WriteByte(esc)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := d.unicodeEscape()
			if !ok {
				d.pos = start
				d.expected("value", "invalid unicode escape code")
			}
			b.WriteRune(r)
		default:
			d.pos = start
			d.expected("value", "invalid escape code")
		}
	}
}

// unicodeEscape reads the four hex digits after \u, and a following
// low surrogate when the first is a high one.
func (d *cjsonDecoder) unicodeEscape() (rune, bool) {
	hex4 := func() (rune, bool) {
		if d.pos+4 > len(d.s) {
			return 0, false
		}
		v, err := strconv.ParseUint(d.s[d.pos:d.pos+4], 16, 32)
		if err != nil {
			return 0, false
		}
		d.pos += 4
		return rune(v), true
	}
	r, ok := hex4()
	if !ok {
		return 0, false
	}
	if r >= 0xd800 && r <= 0xdbff {
		if !strings.HasPrefix(d.s[d.pos:], `\u`) {
			return 0, false
		}
		d.pos += 2
		lo, ok := hex4()
		if !ok || lo < 0xdc00 || lo > 0xdfff {
			return 0, false
		}
		return (r-0xd800)<<10 + (lo - 0xdc00) + 0x10000, true
	} else if r >= 0xdc00 && r <= 0xdfff {
		return 0, false
	}
	return r, utf8.ValidRune(r) || r == 0
}

// number reads what C's strtod accepts from here, as lua-cjson does (with
// decode_invalid_numbers on: hexadecimal, inf and nan too).
func (d *cjsonDecoder) number(what string) lua.LValue {
	end := d.pos
	for end < len(d.s) && strings.IndexByte("+-0123456789.eExXaAbBcCdDfFiInNtTyY", d.s[end]) >= 0 {
		end++
	}
	text := d.s[d.pos:end]
	f, ok := parseStrtod(text, d.cfg.decodeInvalidOK)
	if !ok {
		d.expected(what, "invalid number")
	}
	d.pos = end
	return lua.LNumber(f)
}

func parseStrtod(s string, invalidOK bool) (float64, bool) {
	lower := strings.ToLower(s)
	body := strings.TrimLeft(lower, "+-")
	if strings.HasPrefix(body, "0x") || strings.HasPrefix(body, "inf") || strings.HasPrefix(body, "nan") {
		if !invalidOK {
			return 0, false
		}
		if strings.HasPrefix(body, "0x") {
			v, err := strconv.ParseInt(strings.Replace(lower, "0x", "", 1), 16, 64)
			return float64(v), err == nil
		}
	}
	if strings.HasPrefix(body, "nan") && invalidOK {
		return math.NaN(), body == "nan"
	}
	if strings.HasPrefix(s, "+") {
		return 0, false
	}
	f, err := strconv.ParseFloat(lower, 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return 0, false
	}
	return f, true
}
