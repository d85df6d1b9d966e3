package imgbed

import (
	"errors"

	"github.com/lsmgo-dev/lsmgo"
)

// ownerIndexDone marks a DB whose records all have their owner index
// entries: those written before the index existed get theirs from
// indexOwners, once.
var ownerIndexDone = key(kindMarker, []byte("owner-index"))

// indexOwners writes the owner index entries of records stored before
// the index existed, in batches of at most 1000, then the marker. An
// interrupted run starts again at the next start; rewriting an entry is
// harmless.
func (st *store) indexOwners() error {
	if _, err := st.db.Get(ownerIndexDone); err == nil {
		return nil
	} else if !errors.Is(err, lsmgo.ErrNotFound) {
		return err
	}
	lo, hi := span(key(kindImage))
	it, err := st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	b := st.db.NewBatch()
	for ok := it.First(); ok; ok = it.Next() {
		var rec record
		if decode(it.Value(), &rec, "image record") != nil || rec.Owner == "" {
			continue // Check reports damaged records
		}
		setFor(b, &rec, ownedKey(&rec), nil)
		if b.Count() >= 1000 {
			if err := st.db.Apply(b, nil); err != nil {
				return err
			}
			b = st.db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	b.Set(ownerIndexDone, nil)
	return st.db.Apply(b, nil)
}
