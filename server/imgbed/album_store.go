package imgbed

import (
	"errors"

	"github.com/lsmgo-dev/lsmgo"
)

// createAlbum stores a new album; errIDTaken if its id exists.
func (st *store) createAlbum(a *album) error {
	defer st.locks.lock("a" + a.ID)()
	if _, err := st.db.Get(albumKey(a.ID)); err == nil {
		return errIDTaken
	} else if !errors.Is(err, lsmgo.ErrNotFound) {
		return err
	}
	b := st.db.NewBatch()
	b.Set(albumKey(a.ID), encode(a))
	b.Set(albumByOwnerKey(a), nil)
	return st.db.Apply(b, nil)
}

// album reads the album id.
func (st *store) album(id string) (*album, error) {
	if !validID(id) {
		return nil, errNotFound
	}
	var a album
	if err := getJSON(st.db, albumKey(id), &a, "album"); err != nil {
		return nil, err
	}
	return &a, nil
}

// editAlbum sets a new name (unless empty) and description.
func (st *store) editAlbum(id, name, desc string) (*album, error) {
	defer st.locks.lock("a" + id)()
	a, err := st.album(id)
	if err != nil {
		return nil, err
	}
	if name != "" {
		a.Name = name
	}
	a.Description = desc
	return a, st.db.Set(albumKey(id), encode(a), nil)
}

// setMember puts rec into album a, or takes it out. It holds the image's
// stripe, as removeImage does, so an image being deleted is never added
// back to an album.
func (st *store) setMember(albumID string, rec *record, in bool) error {
	defer st.locks.lock("a"+albumID, "i"+rec.ID)()
	if _, err := st.db.Get(albumKey(albumID)); err != nil {
		return missing(err)
	}
	if _, err := st.db.Get(imageKey(rec.ID)); err != nil {
		return missing(err)
	}
	b := st.db.NewBatch()
	if in {
		// An expiring image's membership expires with it.
		setFor(b, rec, memberKey(albumID, rec), nil)
		setFor(b, rec, memberOfKey(rec.ID, albumID), nil)
	} else {
		b.Delete(memberKey(albumID, rec))
		b.Delete(memberOfKey(rec.ID, albumID))
	}
	return st.db.Apply(b, nil)
}

// leaveAlbums adds to b the removal of rec from every album holding it;
// the caller holds rec's stripe.
func (st *store) leaveAlbums(b *lsmgo.Batch, rec *record) error {
	prefix := memberOfPrefix(rec.ID)
	lo, hi := span(prefix)
	it, err := st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		b.Delete(memberKey(string(it.Key()[len(prefix):]), rec))
		b.Delete(append([]byte(nil), it.Key()...))
	}
	return it.Error()
}

// deleteAlbum removes an album and its memberships (not its images), in
// batches of at most 1000 memberships, the album itself first: from then
// on it is not found, and the remaining memberships are only garbage a
// later delete of their images, or this loop, removes.
func (st *store) deleteAlbum(a *album) error {
	b := st.db.NewBatch()
	b.Delete(albumKey(a.ID))
	b.Delete(albumByOwnerKey(a))
	if err := st.db.Apply(b, nil); err != nil {
		return err
	}
	prefix := memberPrefix(a.ID)
	lo, hi := span(prefix)
	it, err := st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	b = st.db.NewBatch()
	for ok := it.First(); ok; ok = it.Next() {
		id := string(it.Key()[len(prefix)+8:])
		b.Delete(append([]byte(nil), it.Key()...))
		b.Delete(memberOfKey(id, a.ID))
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
	return st.db.Apply(b, nil)
}
