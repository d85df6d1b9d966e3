package resp

import (
	"bytes"
	"io"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// countingReader counts the reads a Reader makes of it.
type countingReader struct {
	chunkReader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.chunkReader.Read(p)
}

// TestReadBufferedAgainstModel feeds random pipelines in random segments
// and checks, after every Fill, that ReadBuffered returns exactly the
// commands the bytes delivered so far complete, in order, without ever
// reading: the property a server's connection loop relies on to know that
// a batch of received commands has ended.
func TestReadBufferedAgainstModel(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 18))
		var data []byte
		var want [][]string
		var ends []int // the offset just past each command
		for range 1 + rng.IntN(30) {
			var cmd []string
			for range 1 + rng.IntN(4) {
				cmd = append(cmd, strconv.Itoa(rng.IntN(1<<(rng.IntN(20)+1))))
			}
			if rng.IntN(3) == 0 {
				data = append(data, "\r\n*0\r\n"...) // empty commands are skipped
			}
			if rng.IntN(4) == 0 {
				for i, a := range cmd {
					if i > 0 {
						data = append(data, ' ')
					}
					data = append(data, a...)
				}
				data = append(data, "\r\n"...)
			} else {
				data = appendCommand(data, cmd)
			}
			want = append(want, cmd)
			ends = append(ends, len(data))
		}
		src := &countingReader{chunkReader: chunkReader{data: data, next: func() int { return 1 + rng.IntN(64) }}}
		r := NewReader(src, Limits{})
		var got [][]string
		delivered := 0
		for {
			reads := src.reads
			for {
				args, ok, err := r.ReadBuffered()
				if err != nil {
					t.Fatalf("seed %d: ReadBuffered: %v", seed, err)
				}
				if !ok {
					break
				}
				got = append(got, toStrings(args))
			}
			if src.reads != reads {
				t.Fatalf("seed %d: ReadBuffered read from the underlying reader", seed)
			}
			complete := 0
			for complete < len(ends) && ends[complete] <= delivered {
				complete++
			}
			if len(got) != complete || complete > 0 && !reflect.DeepEqual(got, want[:complete]) {
				t.Fatalf("seed %d: after %d bytes got %d commands, want %d", seed, delivered, len(got), complete)
			}
			if err := r.Fill(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("seed %d: Fill: %v", seed, err)
			}
			delivered = len(data) - len(src.data)
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d: %d commands, want %d", seed, len(got), len(want))
		}
	}
}

// TestReadBufferedProtocolErrorSticks: a malformed frame found without
// reading is reported, and again by every later call, Fill included.
func TestReadBufferedProtocolErrorSticks(t *testing.T) {
	r := NewReader(bytes.NewReader([]byte("*1\r\n$x\r\n")), Limits{})
	if err := r.Fill(); err != nil {
		t.Fatal(err)
	}
	_, ok, err := r.ReadBuffered()
	if ok || err == nil {
		t.Fatalf("ReadBuffered = %v, %v; want a protocol error", ok, err)
	}
	if _, _, again := r.ReadBuffered(); again != err {
		t.Fatalf("second ReadBuffered: %v, want %v", again, err)
	}
	if again := r.Fill(); again != err {
		t.Fatalf("Fill: %v, want %v", again, err)
	}
}

func appendCommand(dst []byte, args []string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, "\r\n"...)
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, "\r\n"...)
		dst = append(dst, a...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}

func toStrings(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}
