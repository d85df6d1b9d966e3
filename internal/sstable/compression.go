package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Compression is a block compression type. Its numeric value is the type
// byte stored in every block trailer.
type Compression uint8

// Compression types.
const (
	// NoCompression stores blocks as they are.
	NoCompression Compression = 0
	// SnappyCompression stores blocks in the Snappy block format.
	SnappyCompression Compression = 1
	// ZstdCompression stores blocks as a uvarint decoded length followed
	// by one Zstandard frame.
	ZstdCompression Compression = 2
)

// String names the compression for dumps and properties.
func (c Compression) String() string {
	switch c {
	case NoCompression:
		return "none"
	case SnappyCompression:
		return "snappy"
	case ZstdCompression:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// zstd encoders and decoders hold large tables and are slow to create, so
// the package keeps one of each for the whole process. Each is safe for
// concurrent EncodeAll/DecodeAll calls and internally pools up to
// GOMAXPROCS workers, which is the pooling we need.
var (
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			// Blocks carry their own CRC32C; the frame checksum would
			// only add 4 bytes per block.
			zstd.WithEncoderCRC(false),
			// Blocks are small; a smaller window keeps each pooled
			// encoder's memory modest without hurting the ratio.
			zstd.WithWindowSize(1<<20),
			zstd.WithLowerEncoderMem(true))
	})
	zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(maxBlockLen),
			// The decoded length is known up front; never let damaged
			// input grow the output past it.
			zstd.WithDecodeAllCapLimit(true))
	})
)

// compress appends the compressed form of raw to dst[:0]. ok is false when
// compression does not pay (saves less than 1/8), in which case the block
// is stored uncompressed: reading an uncompressed block is cheaper.
func compress(c Compression, dst, raw []byte) (out []byte, ok bool, err error) {
	switch c {
	case SnappyCompression:
		if n := s2.MaxEncodedLen(len(raw)); cap(dst) < n {
			dst = make([]byte, n)
		}
		out = s2.EncodeSnappy(dst[:cap(dst)], raw)
	case ZstdCompression:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, false, err
		}
		out = binary.AppendUvarint(dst[:0], uint64(len(raw)))
		out = enc.EncodeAll(raw, out)
	default:
		return dst[:0], false, nil
	}
	return out, len(out) < len(raw)-len(raw)/8, nil
}

var errBadCompressedLen = errors.New("decoded length out of range")

// decompress decodes a stored block payload of the given type into a
// buffer of the decoded length that alloc returns. The error text becomes
// the reason of a CorruptionError.
func decompress(typ byte, payload []byte, alloc func(n int) []byte) ([]byte, error) {
	switch Compression(typ) {
	case NoCompression:
		return payload, nil
	case SnappyCompression:
		n, err := s2.DecodedLen(payload)
		if err != nil {
			return nil, err
		}
		if n > maxBlockLen {
			return nil, errBadCompressedLen
		}
		out, err := s2.Decode(alloc(n), payload)
		if err != nil {
			return nil, err
		}
		return out, nil
	case ZstdCompression:
		n, k := binary.Uvarint(payload)
		if k <= 0 || n > maxBlockLen {
			return nil, errBadCompressedLen
		}
		dec, err := zstdDecoder()
		if err != nil {
			return nil, err
		}
		out, err := dec.DecodeAll(payload[k:], alloc(int(n))[:0])
		if err != nil {
			return nil, err
		}
		if uint64(len(out)) != n {
			return nil, errBadCompressedLen
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown compression type %d", typ)
}
