package rdb

import (
	"bytes"
	"encoding/binary"
)

// A stream (TypeStreamListpacks*) is a count of nodes, each a 16-byte
// node key (its master id, ms and seq big-endian) and a listpack of
// entries; then the stream's length, last id, and from
// TypeStreamListpacks2 on its first id, largest deleted id and entries
// ever added; then its consumer groups. Every id outside a node is two
// RDB lengths, ms and seq, except in a pending entries list (PEL), where
// ids are raw node-key bytes.
//
// A node's listpack starts with its master entry: the count of live
// entries, the count of entries marked deleted, the master fields (a
// count and the names) and a 0. Each entry follows as flags, its id as
// the ms and seq differences from the master id, then either its values
// alone (flag SameFields: its fields are the master's) or a field count
// and field-value pairs, and last the number of listpack elements the
// entry used before this one, so that Redis can walk a node backwards.
const (
	streamFlagDeleted    = 1
	streamFlagSameFields = 2
)

// StreamID is a stream entry id.
type StreamID struct{ Ms, Seq uint64 }

// Less reports whether id sorts before o.
func (id StreamID) Less(o StreamID) bool {
	return id.Ms < o.Ms || id.Ms == o.Ms && id.Seq < o.Seq
}

// AppendRaw appends id as a node key or PEL id: 16 bytes, big-endian.
func (id StreamID) AppendRaw(dst []byte) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(dst, id.Ms), id.Seq)
}

// AppendID appends id as two RDB lengths.
func AppendID(dst []byte, id StreamID) []byte { return AppendLen(AppendLen(dst, id.Ms), id.Seq) }

// ID reads an id written as two RDB lengths.
func (r *Reader) ID() (StreamID, error) {
	ms, err := r.Len()
	if err != nil {
		return StreamID{}, err
	}
	seq, err := r.Len()
	return StreamID{ms, seq}, err
}

// RawID reads an id written as 16 raw bytes.
func (r *Reader) RawID() (StreamID, error) {
	b, err := r.take(16)
	if err != nil {
		return StreamID{}, err
	}
	return StreamID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}, nil
}

// AppendMillis appends a time in milliseconds as Redis'
// rdbSaveMillisecondTime does: 8 bytes, little-endian.
func AppendMillis(dst []byte, ms int64) []byte {
	return binary.LittleEndian.AppendUint64(dst, uint64(ms))
}

// Millis reads a time written by AppendMillis.
func (r *Reader) Millis() (int64, error) {
	b, err := r.take(8)
	if err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}

// StreamEntry is one entry of a stream node.
type StreamEntry struct {
	ID      StreamID
	Deleted bool     // marked deleted: Redis keeps such entries until their node empties
	Fields  [][]byte // field, value, field, value …
}

// AppendStreamNode appends one node holding entries (live ones, in id
// order, at least one) as Redis' streamAppendItem would have built it had
// they been added in this order: the first entry's id and fields are the
// master's, and each entry with the master's fields stores its values
// alone.
func AppendStreamNode(dst []byte, entries []StreamEntry) []byte {
	master := entries[0]
	var w ListpackWriter
	w.AppendInt(int64(len(entries)))
	w.AppendInt(0)
	w.AppendInt(int64(len(master.Fields) / 2))
	for i := 0; i < len(master.Fields); i += 2 {
		w.Append(master.Fields[i])
	}
	w.AppendInt(0)
	for _, e := range entries {
		same := sameFieldNames(e.Fields, master.Fields)
		n := int64(len(e.Fields) / 2)
		flags, used := int64(0), 3+n
		if same {
			flags = streamFlagSameFields
		} else {
			used += n + 1
		}
		w.AppendInt(flags)
		w.AppendInt(int64(e.ID.Ms - master.ID.Ms))
		w.AppendInt(int64(e.ID.Seq - master.ID.Seq))
		if !same {
			w.AppendInt(n)
		}
		for i := 0; i < len(e.Fields); i += 2 {
			if !same {
				w.Append(e.Fields[i])
			}
			w.Append(e.Fields[i+1])
		}
		w.AppendInt(used)
	}
	dst = AppendString(dst, master.ID.AppendRaw(nil))
	return AppendString(dst, w.Finish())
}

// sameFieldNames reports whether the pairs in fields name the fields in
// master's order.
func sameFieldNames(fields, master [][]byte) bool {
	if len(fields) != len(master) {
		return false
	}
	for i := 0; i < len(fields); i += 2 {
		if !bytes.Equal(fields[i], master[i]) {
			return false
		}
	}
	return true
}

// StreamNode is a decoded node: its entries, deleted ones included, in
// the order the listpack holds them (ids are not checked for order).
type StreamNode struct {
	Entries []StreamEntry
	Live    int // entries not marked deleted
}

// DecodeStreamNode decodes the node with key key and listpack lp,
// checking everything Redis' deep sanitization checks: the master entry,
// each entry's element count against its lp-count, the live and deleted
// counts against the master's, no element left over.
func DecodeStreamNode(key, lp []byte) (StreamNode, error) {
	var node StreamNode
	if len(key) != 16 {
		return node, ErrFormat
	}
	master := StreamID{binary.BigEndian.Uint64(key), binary.BigEndian.Uint64(key[8:])}
	var elems [][]byte
	err := WalkListpack(lp, func(e []byte) error {
		elems = append(elems, bytes.Clone(e)) // e is valid only during the call
		return nil
	})
	if err != nil {
		return node, err
	}
	ints := func(n int) ([]int64, bool) {
		if len(elems) < n {
			return nil, false
		}
		out := make([]int64, n)
		for i := range out {
			v, ok := CanonicalInt(elems[i])
			if !ok {
				return nil, false
			}
			out[i] = v
		}
		elems = elems[n:]
		return out, true
	}
	head, ok := ints(3)
	if !ok || head[0] < 0 || head[1] < 0 || head[2] < 0 || int64(len(elems)) <= head[2] {
		return node, ErrFormat
	}
	live, deleted, nf := head[0], head[1], int(head[2])
	masterFields := elems[:nf]
	elems = elems[nf:]
	if zero, ok := ints(1); !ok || zero[0] != 0 || live+deleted == 0 || live+deleted > int64(len(elems)) {
		return node, ErrFormat
	}
	for range live + deleted {
		hdr, ok := ints(3)
		if !ok || hdr[0]&^(streamFlagDeleted|streamFlagSameFields) != 0 {
			return node, ErrFormat
		}
		e := StreamEntry{ID: StreamID{master.Ms + uint64(hdr[1]), master.Seq + uint64(hdr[2])}, Deleted: hdr[0]&streamFlagDeleted != 0}
		n, used := int64(nf), int64(3)
		if hdr[0]&streamFlagSameFields == 0 {
			count, ok := ints(1)
			if !ok || count[0] < 0 || count[0] > int64(len(elems))/2 {
				return node, ErrFormat
			}
			n = count[0]
			used += n + 1
			e.Fields, elems = elems[:2*n], elems[2*n:]
		} else {
			if n > int64(len(elems)) {
				return node, ErrFormat
			}
			e.Fields = make([][]byte, 0, 2*n)
			for i, v := range elems[:n] {
				e.Fields = append(e.Fields, masterFields[i], v)
			}
			elems = elems[n:]
		}
		if back, ok := ints(1); !ok || back[0] != n+used {
			return node, ErrFormat
		}
		if !e.Deleted {
			node.Live++
		}
		node.Entries = append(node.Entries, e)
	}
	if len(elems) != 0 || int64(node.Live) != live {
		return node, ErrFormat
	}
	return node, nil
}
