package record

import (
	"io"
	"iter"
)

// All returns an iterator over the records left in the log, for the
// readers that walk a whole file (recovery tools, Check, dump) to share one
// loop. It yields each record with a nil error, in order, and, when reading
// stops on damage or an I/O error, one last pair of a nil record and that
// error. A log that ends cleanly or in a torn tail ends the iteration with
// no error; TornTail tells which. Offset gives the offset of the record
// just yielded, which, as with Next, is valid only until the next step.
func (r *Reader) All() iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for {
			rec, err := r.Next()
			if err == io.EOF {
				return
			}
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}
