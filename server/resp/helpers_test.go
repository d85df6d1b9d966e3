package resp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"
	"testing/iotest"
)

// chunkReader hands out data in pieces whose sizes come from next, the way
// a socket delivers a stream in arbitrary segments.
type chunkReader struct {
	data []byte
	next func() int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), max(1, c.next()))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// splitReader delivers data in two reads cut at one offset.
func splitReader(data []byte, at int) io.Reader {
	return io.MultiReader(bytes.NewReader(data[:at]), bytes.NewReader(data[at:]))
}

// deliveries returns the ways every table input is fed to a Reader: whole,
// one byte per read, random segments, and (for short inputs) cut in two at
// every offset. Parsing must not depend on which is used.
func deliveries(data []byte, rng *rand.Rand) map[string]io.Reader {
	m := map[string]io.Reader{
		"whole":   bytes.NewReader(data),
		"onebyte": iotest.OneByteReader(bytes.NewReader(data)),
		"random":  &chunkReader{data: data, next: func() int { return 1 + rng.IntN(7) }},
	}
	if len(data) <= 200 {
		for at := 1; at < len(data); at++ {
			m["split at "+itoa(at)] = splitReader(data, at)
		}
	}
	return m
}

func itoa(n int) string { return strconv.Itoa(n) }

// readCommands reads until an error and returns copies of all commands and
// the error's text.
func readCommands(r *Reader) ([][]string, string) {
	var cmds [][]string
	for {
		args, err := r.ReadCommand()
		if err != nil {
			return cmds, err.Error()
		}
		cmd := make([]string, len(args))
		for i, a := range args {
			cmd[i] = string(a)
		}
		cmds = append(cmds, cmd)
	}
}

func isProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

// seed returns the seed for a randomized test, logged so a failure can be
// replayed by hard-coding it.
func seed(t testing.TB) uint64 {
	s := rand.Uint64()
	t.Logf("seed %d", s)
	return s
}

func iotestOneByte(data []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }
