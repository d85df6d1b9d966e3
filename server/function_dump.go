package server

import (
	"encoding/binary"
	"hash/crc64"
)

// FUNCTION DUMP's payload, as Redis 7.0 writes it: for each library the
// RDB opcode FUNCTION2 (245) and its code as an RDB string, then the RDB
// version (10, Redis 7.0's) in two bytes and a CRC-64/Jones of all that in
// eight, both little-endian. lsmgo writes strings uncompressed and reads
// the LZF-compressed ones Redis writes for longer code.
const (
	rdbOpcodeFunction2 = 245
	rdbVersion         = 10
	// rdbEncLZF marks an LZF-compressed string (length type 3, value 3).
	rdbEncLZF = 0xc3
)

var errBadPayload = redisError("ERR DUMP payload version or checksum are wrong")

// crcJones is CRC-64/Jones, reflected: Redis' crc64.
var crcJones = crc64.MakeTable(0x95ac9329ac4bc9b5)

// redisCRC64 is Redis' crc64(0, p): Go's crc64 inverts the register
// before and after, Redis' does not.
func redisCRC64(p []byte) uint64 { return ^crc64.Update(^uint64(0), crcJones, p) }

func dumpFunctions(codes [][]byte) []byte {
	var out []byte
	for _, code := range codes {
		out = append(out, rdbOpcodeFunction2)
		out = appendRDBLen(out, uint64(len(code)))
		out = append(out, code...)
	}
	out = binary.LittleEndian.AppendUint16(out, rdbVersion)
	return binary.LittleEndian.AppendUint64(out, redisCRC64(out))
}

// appendRDBLen writes an RDB length: 6, 14, 32 or 64 bits.
func appendRDBLen(out []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(out, byte(n))
	case n < 1<<14:
		return append(out, 0x40|byte(n>>8), byte(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(out, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(out, 0x81), n)
}

func undumpFunctions(p []byte) ([][]byte, error) {
	if len(p) < 10 {
		return nil, errBadPayload
	}
	body, footer := p[:len(p)-8], p[len(p)-8:]
	if v := binary.LittleEndian.Uint16(body[len(body)-2:]); v > rdbVersion+1 ||
		binary.LittleEndian.Uint64(footer) != redisCRC64(body) {
		return nil, errBadPayload
	}
	r := rdbReader{p: body[:len(body)-2]}
	var codes [][]byte
	for len(r.p) > 0 {
		if r.p[0] != rdbOpcodeFunction2 {
			return nil, redisError("ERR given type is not a function")
		}
		r.p = r.p[1:]
		code, err := r.str()
		if err != nil {
			return nil, err
		}
		codes = append(codes, code)
	}
	return codes, nil
}

var errBadRDB = redisError("ERR Bad data format")

type rdbReader struct{ p []byte }

func (r *rdbReader) take(n uint64) ([]byte, error) {
	if uint64(len(r.p)) < n {
		return nil, errBadRDB
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b, nil
}

// length reads an RDB length, or the encoding byte of a special string
// (special true).
func (r *rdbReader) length() (n uint64, special bool, err error) {
	b, err := r.take(1)
	if err != nil {
		return 0, false, err
	}
	switch b[0] >> 6 {
	case 0:
		return uint64(b[0] & 0x3f), false, nil
	case 1:
		lo, err := r.take(1)
		if err != nil {
			return 0, false, err
		}
		return uint64(b[0]&0x3f)<<8 | uint64(lo[0]), false, nil
	case 3:
		return uint64(b[0]), true, nil
	}
	switch b[0] {
	case 0x80:
		v, err := r.take(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(v)), false, nil
	case 0x81:
		v, err := r.take(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(v), false, nil
	}
	return 0, false, errBadRDB
}

// str reads an RDB string: plain or LZF-compressed (library code is never
// stored as an integer encoding).
func (r *rdbReader) str() ([]byte, error) {
	n, special, err := r.length()
	if err != nil || !special {
		if err != nil {
			return nil, err
		}
		b, err := r.take(n)
		return append([]byte(nil), b...), err
	}
	if n != rdbEncLZF {
		return nil, errBadRDB
	}
	clen, _, err := r.length()
	if err != nil {
		return nil, err
	}
	ulen, _, err := r.length()
	if err != nil {
		return nil, err
	}
	comp, err := r.take(clen)
	if err != nil {
		return nil, err
	}
	return lzfDecompress(comp, ulen)
}

// lzfDecompress expands LZF data (liblzf's format) into exactly n bytes.
func lzfDecompress(in []byte, n uint64) ([]byte, error) {
	if n > 1<<30 {
		return nil, errBadRDB
	}
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a literal run of ctrl+1 bytes
			end := i + ctrl + 1
			if end > len(in) || uint64(len(out)+ctrl+1) > n {
				return nil, errBadRDB
			}
			out = append(out, in[i:end]...)
			i = end
			continue
		}
		length := ctrl >> 5
		if length == 7 {
			if i >= len(in) {
				return nil, errBadRDB
			}
			length += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, errBadRDB
		}
		back := len(out) - (ctrl&0x1f)<<8 - int(in[i]) - 1
		i++
		if back < 0 || uint64(len(out)+length+2) > n {
			return nil, errBadRDB
		}
		for j := range length + 2 { // byte by byte: the copy may overlap
			out = append(out, out[back+j])
		}
	}
	if uint64(len(out)) != n {
		return nil, errBadRDB
	}
	return out, nil
}
