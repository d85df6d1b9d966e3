package server

import (
	"errors"

	"github.com/lsmgo-dev/lsmgo/server/internal/rdb"
)

// FUNCTION DUMP's payload, as Redis 7.0 writes it: for each library the
// RDB opcode FUNCTION2 and its code as an RDB string, then the RDB trailer
// (rdb.Seal).

// maxDecoded caps what the LZF strings of one payload (DUMP or FUNCTION
// DUMP) may expand to: Redis' default proto-max-bulk-len, the most one
// argument may carry uncompressed.
const maxDecoded = 512 << 20

var (
	errBadPayload = redisError("ERR " + rdb.ErrPayload.Error())
	errBadRDB     = redisError("ERR Bad data format")
)

// rdbError turns an error of package rdb into Redis' reply for it.
func rdbError(err error) error {
	switch {
	case errors.Is(err, rdb.ErrPayload):
		return errBadPayload
	case errors.Is(err, rdb.ErrFormat):
		return errBadRDB
	case errors.Is(err, rdb.ErrBudget):
		return redisError("ERR " + rdb.ErrBudget.Error())
	}
	return err
}

func dumpFunctions(codes [][]byte) []byte {
	var out []byte
	for _, code := range codes {
		out = append(out, rdb.OpcodeFunction2)
		out = rdb.AppendLen(out, uint64(len(code)))
		out = append(out, code...)
	}
	return rdb.Seal(out)
}

func undumpFunctions(p []byte) ([][]byte, error) {
	body, err := rdb.Open(p)
	if err != nil {
		return nil, rdbError(err)
	}
	r := rdb.NewReader(body, maxDecoded)
	var codes [][]byte
	for !r.Done() {
		if op, _ := r.Byte(); op != rdb.OpcodeFunction2 {
			return nil, redisError("ERR given type is not a function")
		}
		code, err := r.String()
		if err != nil {
			return nil, rdbError(err)
		}
		codes = append(codes, append([]byte(nil), code...))
	}
	return codes, nil
}
