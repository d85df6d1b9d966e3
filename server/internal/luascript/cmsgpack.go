package luascript

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpackLib is lua-cmsgpack as Redis ships it: pack(...) encodes each
// argument in MessagePack and concatenates them; unpack(s) decodes every
// object in s; unpack_one(s, offset) and unpack_limit(s, limit, offset)
// decode some and return the next offset (-1 at the end) first.
func cmsgpackLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	L.SetFuncs(t, map[string]lua.LGFunction{
		"pack":   msgpackPack,
		"unpack": func(L *lua.LState) int { return msgpackUnpack(L, 0, 0, true) },
		"unpack_one": func(L *lua.LState) int {
			return msgpackUnpack(L, 1, L.OptInt(2, 0), false)
		},
		"unpack_limit": func(L *lua.LState) int {
			return msgpackUnpack(L, L.OptInt(2, 0), L.OptInt(3, 0), false)
		},
	})
	return t
}

// msgpackMaxNesting is lua-cmsgpack's LUACMSGPACK_MAX_NESTING: deeper
// tables encode as nil.
const msgpackMaxNesting = 16

func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		argError(L, 0, "pack", "MessagePack pack needs input.")
	}
	var out []byte
	for i := 1; i <= n; i++ {
		out = msgpackEncode(out, L.Get(i), 0)
	}
	L.Push(lua.LString(out))
	return 1
}

func msgpackEncode(out []byte, v lua.LValue, level int) []byte {
	switch v := v.(type) {
	case lua.LBool:
		if v {
			return append(out, 0xc3)
		}
		return append(out, 0xc2)
	case lua.LNumber:
		f := float64(v)
		if !math.IsInf(f, 0) && f == float64(int64(f)) {
			return msgpackInt(out, int64(f))
		}
		if f32 := float32(f); float64(f32) == f {
			return binary.BigEndian.AppendUint32(append(out, 0xca), math.Float32bits(f32))
		}
		return binary.BigEndian.AppendUint64(append(out, 0xcb), math.Float64bits(f))
	case lua.LString:
		n := len(v)
		switch {
		case n < 32:
			out = append(out, 0xa0|byte(n))
		case n <= 0xff:
			out = append(out, 0xd9, byte(n))
		case n <= 0xffff:
			out = binary.BigEndian.AppendUint16(append(out, 0xda), uint16(n))
		default:
			out = binary.BigEndian.AppendUint32(append(out, 0xdb), uint32(n))
		}
		return append(out, v...)
	case *lua.LTable:
		if level == msgpackMaxNesting {
			return append(out, 0xc0)
		}
		if n, ok := tableArrayLen(v); ok {
			out = msgpackHeader(out, n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				out = msgpackEncode(out, v.RawGetInt(i), level+1)
			}
			return out
		}
		n := 0
		v.ForEach(func(lua.LValue, lua.LValue) { n++ })
		out = msgpackHeader(out, n, 0x80, 0xde, 0xdf)
		v.ForEach(func(k, e lua.LValue) {
			out = msgpackEncode(out, k, level+1)
			out = msgpackEncode(out, e, level+1)
		})
		return out
	}
	return append(out, 0xc0)
}

// tableArrayLen reports whether every key of t is one of 1..n, and n.
func tableArrayLen(t *lua.LTable) (int, bool) {
	count, maxKey := 0, 0.0
	array := true
	t.ForEach(func(k, _ lua.LValue) {
		n, ok := k.(lua.LNumber)
		if !ok || n <= 0 || float64(n) != math.Trunc(float64(n)) {
			array = false
			return
		}
		maxKey = max(maxKey, float64(n))
		count++
	})
	return count, array && float64(count) == maxKey
}

func msgpackHeader(out []byte, n int, fix, b16, b32 byte) []byte {
	switch {
	case n < 16:
		return append(out, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(out, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(out, b32), uint32(n))
}

func msgpackInt(out []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(out, byte(n))
		case n <= 0xff:
			return append(out, 0xcc, byte(n))
		case n <= 0xffff:
			return binary.BigEndian.AppendUint16(append(out, 0xcd), uint16(n))
		case n <= 0xffffffff:
			return binary.BigEndian.AppendUint32(append(out, 0xce), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(out, 0xcf), uint64(n))
	}
	switch {
	case n >= -32:
		return append(out, byte(int8(n)))
	case n >= math.MinInt8:
		return append(out, 0xd0, byte(int8(n)))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(out, 0xd1), uint16(int16(n)))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(out, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(out, 0xd3), uint64(n))
}

const (
	msgMissingBytes = "Missing bytes in input."
	msgBadFormat    = "Bad data format in input."
)

func msgpackUnpack(L *lua.LState, limit, offset int, all bool) int {
	s := L.CheckString(1)
	if offset < 0 || limit < 0 {
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", offset, len(s))
	}
	if offset > len(s) {
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	d := msgpackDecoder{L: L, data: []byte(s), pos: offset}
	var vals []lua.LValue
	for d.pos < len(d.data) && (all || len(vals) < limit) {
		vals = append(vals, d.decode(0))
	}
	if !all {
		next := d.pos
		if next == len(d.data) {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range vals {
		L.Push(v)
	}
	if all {
		return len(vals)
	}
	return len(vals) + 1
}

type msgpackDecoder struct {
	L    *lua.LState
	data []byte
	pos  int
}

func (d *msgpackDecoder) take(n int) []byte {
	if n < 0 || len(d.data)-d.pos < n {
		d.L.RaiseError(msgMissingBytes)
	}
	b := d.data[d.pos : d.pos+n]
	d.pos += n
	return b
}

func (d *msgpackDecoder) uint(n int) uint64 {
	var v uint64
	for _, c := range d.take(n) {
		v = v<<8 | uint64(c)
	}
	return v
}

func (d *msgpackDecoder) decode(depth int) lua.LValue {
	if depth > maxReplyDepth {
		d.L.RaiseError(msgBadFormat)
	}
	c := d.take(1)[0]
	switch {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return lua.LString(d.take(int(c & 0x1f)))
	case c&0xf0 == 0x90:
		return d.array(int(c&0x0f), depth)
	case c&0xf0 == 0x80:
		return d.object(int(c&0x0f), depth)
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xcc, 0xcd, 0xce, 0xcf:
		return lua.LNumber(float64(d.uint(1 << (c - 0xcc))))
	case 0xd0:
		return lua.LNumber(int8(d.uint(1)))
	case 0xd1:
		return lua.LNumber(int16(d.uint(2)))
	case 0xd2:
		return lua.LNumber(int32(d.uint(4)))
	case 0xd3:
		return lua.LNumber(float64(int64(d.uint(8))))
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(d.uint(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(d.uint(8)))
	case 0xd9, 0xc4:
		return lua.LString(d.take(int(d.uint(1))))
	case 0xda, 0xc5:
		return lua.LString(d.take(int(d.uint(2))))
	case 0xdb, 0xc6:
		return lua.LString(d.take(int(d.uint(4))))
	case 0xdc:
		return d.array(int(d.uint(2)), depth)
	case 0xdd:
		return d.array(int(d.uint(4)), depth)
	case 0xde:
		return d.object(int(d.uint(2)), depth)
	case 0xdf:
		return d.object(int(d.uint(4)), depth)
	}
	d.L.RaiseError(msgBadFormat)
	return lua.LNil
}

func (d *msgpackDecoder) array(n, depth int) lua.LValue {
	// Each element takes at least a byte: a header claiming more than
	// the input holds is refused before anything is allocated for it.
	if n > len(d.data)-d.pos {
		d.L.RaiseError(msgMissingBytes)
	}
	t := d.L.CreateTable(n, 0)
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, d.decode(depth+1))
	}
	return t
}

func (d *msgpackDecoder) object(n, depth int) lua.LValue {
	if 2*n > len(d.data)-d.pos {
		d.L.RaiseError(msgMissingBytes)
	}
	t := d.L.CreateTable(0, n)
	for range n {
		k := d.decode(depth + 1)
		v := d.decode(depth + 1)
		if k == lua.LNil {
			d.L.RaiseError("table index is nil")
		}
		d.L.RawSet(t, k, v)
	}
	return t
}
