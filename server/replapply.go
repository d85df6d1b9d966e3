package server

import (
	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// replApplyBytes bounds the batches a replica commits at once.
const replApplyBytes = 1 << 20

// replApplier commits, on a replica, a batch from the primary together
// with those already received behind it, as one engine commit
// (lsmgo.DB.ApplyReplicatedBatches): a replica that applied each small
// batch on its own paid a WAL write and a pass of the commit pipeline per
// batch, and fell behind a primary whose commit groups carry many
// (doc/replication.md, "Applying batches"). It only takes what is already
// read, so it adds no wait.
type replApplier struct {
	buf   []byte
	ends  []int
	parts [][]byte
}

// apply commits the batch in *v and the batches buffered in rd behind it,
// up to replApplyBytes. When it read a value that is not a batch, it
// leaves it in *v and reports held: the caller handles it next.
func (a *replApplier) apply(db *lsmgo.DB, rd *resp.Reader, v *resp.Value) (held bool, err error) {
	if rd.Buffered() == 0 {
		// The common case of a replica that keeps up: one batch.
		a.parts = append(a.parts[:0], v.Str)
		err = db.ApplyReplicatedBatches(a.parts, nil)
		a.parts[0] = nil
		return false, err
	}
	a.buf, a.ends, a.parts = a.buf[:0], a.ends[:0], a.parts[:0]
	for {
		// The reader's values are valid until its next read.
		a.buf = append(a.buf, v.Str...)
		a.ends = append(a.ends, len(a.buf))
		if rd.Buffered() == 0 || len(a.buf) >= replApplyBytes {
			break
		}
		if *v, err = rd.ReadValue(); err != nil {
			return false, err
		}
		if v.Type != '$' {
			held = true
			break
		}
	}
	start := 0
	for _, end := range a.ends {
		a.parts = append(a.parts, a.buf[start:end])
		start = end
	}
	err = db.ApplyReplicatedBatches(a.parts, nil)
	clear(a.parts)
	return held, err
}
