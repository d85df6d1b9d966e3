package server

import (
	"fmt"
	"slices"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/rdb"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// DUMP serializes a value as Redis 7.0 does (RDB version 10), choosing
// the encoding Redis would hold the value in under its default settings:
// a listpack for a hash or sorted set of at most 128 entries of at most 64
// bytes, an intset for a set of at most 512 integers, a quicklist of 8 KiB
// listpacks for a list, and the plain encodings beyond. The thresholds
// are Redis' defaults, not the no-effect settings CONFIG SET accepts
// (config_noeffect.go): the encoding is a detail of the payload that any
// Redis loads whatever its own settings. Elements stream from the engine
// into the payload one by one.
const (
	dumpListpackEntries = 128
	dumpListpackValue   = 64
	dumpIntsetEntries   = 512
	dumpQuicklistNode   = 8 << 10
)

// errDumpTooBig refuses a payload longer than one bulk reply may be.
var errDumpTooBig = redisError("ERR the DUMP payload would be longer than proto-max-bulk-len")

// dumper builds one DUMP payload.
type dumper struct {
	out   []byte
	limit int64 // the most bytes out may reach
	err   error // the first error, which stops every walk
}

// grow checks the payload against its limit after an append; false stops
// the element walk.
func (d *dumper) grow() bool {
	if int64(len(d.out)) > d.limit {
		d.err = errDumpTooBig
		return false
	}
	return true
}

// dumpValue returns the DUMP payload of e, the entry at key, read
// through r, or errDumpTooBig past limit bytes.
func (ks *keyspace) dumpValue(r lsmgo.Reader, key []byte, e entry, limit int64) ([]byte, error) {
	d := &dumper{limit: limit}
	var err error
	switch e.typ {
	case typeString:
		d.out = rdb.AppendString(append(d.out, rdb.TypeString), e.payload)
	default:
		var m collMeta
		if m, err = decodeMeta(key, e); err != nil {
			return nil, err
		}
		switch e.typ {
		case typeHash:
			err = ks.dumpHash(r, d, key, m)
		case typeSet:
			err = ks.dumpSet(r, d, key, m)
		case typeZSet:
			err = ks.dumpZSet(r, d, key, m)
		case typeList:
			err = ks.dumpList(r, d, key, m)
		case typeFragString:
			err = ks.dumpFragString(r, d, key, m)
		case typeStream:
			err = ks.dumpStream(r, d, key, e)
		default:
			return nil, redisError(fmt.Sprintf("ERR DUMP does not serialize %s values", typeNames[e.typ]))
		}
	}
	if err == nil {
		err = d.err
	}
	if err == nil && !d.grow() {
		err = d.err
	}
	if err != nil {
		return nil, err
	}
	return rdb.Seal(d.out), nil
}

// dumpFragString writes a string stored in fragments (fragstring.go)
// as the one string it is.
func (ks *keyspace) dumpFragString(r lsmgo.Reader, d *dumper, key []byte, m collMeta) error {
	if m.count > d.limit {
		return errDumpTooBig
	}
	s, err := ks.readFragString(r, key, m)
	if err == nil {
		d.out = rdb.AppendString(append(d.out, rdb.TypeString), s)
	}
	return err
}

// countMismatch reports a collection whose elements disagree with the
// count in its metadata.
func countMismatch(key []byte, typ byte, counted, want int64) error {
	return &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", key), Offset: -1,
		Reason: fmt.Sprintf("%s holds %d elements, its metadata says %d", typeNames[typ], counted, want)}
}

func (ks *keyspace) dumpHash(r lsmgo.Reader, d *dumper, key []byte, m collMeta) error {
	if m.count <= dumpListpackEntries {
		fields, vals, err := ks.readElems(r, key, m, nil)
		if err != nil {
			return err
		}
		if int64(len(fields)) != m.count {
			return countMismatch(key, m.typ, int64(len(fields)), m.count)
		}
		if !slices.ContainsFunc(fields, tooLongForListpack) && !slices.ContainsFunc(vals, tooLongForListpack) {
			var lp rdb.ListpackWriter
			for i := range fields {
				lp.Append(fields[i])
				lp.Append(vals[i])
			}
			d.out = rdb.AppendString(append(d.out, rdb.TypeHashListpack), lp.Finish())
			return nil
		}
	}
	d.out = rdb.AppendLen(append(d.out, rdb.TypeHash), uint64(m.count))
	n := int64(0)
	err := ks.scanElems(r, key, m, nil, func(field, val []byte) bool {
		d.out = rdb.AppendString(rdb.AppendString(d.out, field), val)
		n++
		return d.grow()
	})
	if err == nil && d.err == nil && n != m.count {
		err = countMismatch(key, m.typ, n, m.count)
	}
	return err
}

func tooLongForListpack(b []byte) bool { return len(b) > dumpListpackValue }

func (ks *keyspace) dumpSet(r lsmgo.Reader, d *dumper, key []byte, m collMeta) error {
	if m.count <= dumpIntsetEntries {
		members, _, err := ks.readElems(r, key, m, nil)
		if err != nil {
			return err
		}
		if int64(len(members)) != m.count {
			return countMismatch(key, m.typ, int64(len(members)), m.count)
		}
		ints := make([]int64, 0, len(members))
		for _, member := range members {
			v, ok := rdb.CanonicalInt(member)
			if !ok {
				break
			}
			ints = append(ints, v)
		}
		if len(ints) == len(members) {
			slices.Sort(ints)
			d.out = rdb.AppendString(append(d.out, rdb.TypeSetIntset), rdb.AppendIntset(nil, ints))
			return nil
		}
	}
	d.out = rdb.AppendLen(append(d.out, rdb.TypeSet), uint64(m.count))
	n := int64(0)
	err := ks.scanElems(r, key, m, nil, func(member, _ []byte) bool {
		d.out = rdb.AppendString(d.out, member)
		n++
		return d.grow()
	})
	if err == nil && d.err == nil && n != m.count {
		err = countMismatch(key, m.typ, n, m.count)
	}
	return err
}

func (ks *keyspace) dumpZSet(r lsmgo.Reader, d *dumper, key []byte, m collMeta) error {
	if m.count <= dumpListpackEntries {
		var lp rdb.ListpackWriter
		small, n := true, int64(0)
		var num []byte
		err := ks.zwalk(r, key, m, nil, nil, false, func(score float64, member []byte) bool {
			if tooLongForListpack(member) {
				small = false
				return false
			}
			lp.Append(member)
			num = resp.AppendDouble(num[:0], score) // what Redis 7.2 writes; 7.0's %.17g reads back the same
			lp.Append(num)
			n++
			return true
		})
		if err != nil {
			return err
		}
		if small {
			if n != m.count {
				return countMismatch(key, m.typ, n, m.count)
			}
			d.out = rdb.AppendString(append(d.out, rdb.TypeZSetListpack), lp.Finish())
			return nil
		}
	}
	// Redis writes a skiplist from its tail, highest score first.
	d.out = rdb.AppendLen(append(d.out, rdb.TypeZSet2), uint64(m.count))
	n := int64(0)
	err := ks.zwalk(r, key, m, nil, nil, true, func(score float64, member []byte) bool {
		d.out = rdb.AppendBinaryDouble(rdb.AppendString(d.out, member), score)
		n++
		return d.grow()
	})
	if err == nil && d.err == nil && n != m.count {
		err = countMismatch(key, m.typ, n, m.count)
	}
	return err
}

// dumpList writes a quicklist of listpack nodes of up to
// dumpQuicklistNode bytes each (a longer element gets a node of its own).
// The node count comes before the nodes, so they are built apart first.
func (ks *keyspace) dumpList(r lsmgo.Reader, d *dumper, key []byte, m collMeta) error {
	var nodes []byte
	count := uint64(0)
	var lp rdb.ListpackWriter
	lp.Reset()
	flush := func() {
		nodes = rdb.AppendString(rdb.AppendLen(nodes, rdb.ContainerPacked), lp.Finish())
		count++
		lp.Reset()
	}
	err := ks.listScan(r, key, m, 0, m.count-1, false, func(_ int64, val []byte) bool {
		if lp.Count() > 0 && lp.Size()+len(val)+11 > dumpQuicklistNode {
			flush()
		}
		lp.Append(val)
		if int64(len(nodes)+lp.Size()) > d.limit {
			d.err = errDumpTooBig
			return false
		}
		return true
	})
	if err != nil || d.err != nil {
		return err
	}
	flush()
	d.out = rdb.AppendLen(append(d.out, rdb.TypeListQuicklist2), count)
	d.out = append(d.out, nodes...)
	return nil
}
