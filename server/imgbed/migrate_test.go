package imgbed

import (
	"testing"
)

// TestOwnerIndexBackfill: records stored before the owner index existed
// (no entry, no marker) get their entries at the next start, so "my
// uploads" lists them and Check passes.
func TestOwnerIndexBackfill(t *testing.T) {
	cfg := Config{Tokens: []Token{{Name: "old", Secret: "old-secret"}}}
	th := newTestHost(t, cfg)
	_, r := th.uploadRaw(t, encodePNG(t, gradient(10, 10)), "image/png", "Authorization", "Bearer old-secret")
	rec, err := th.st.record(r.Data.Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range [][]byte{ownedKey(rec), ownerIndexDone} {
		if err := th.db.Delete(k, nil); err != nil {
			t.Fatal(err)
		}
	}
	if th.Check() == nil {
		t.Fatal("Check misses a record without its owner index entry")
	}
	cfg.SpoolDir = t.TempDir()
	if _, err := New(th.db, cfg); err != nil {
		t.Fatal(err)
	}
	if err := th.Check(); err != nil {
		t.Fatalf("after the backfill: %v", err)
	}
	if _, err := th.db.Get(ownerIndexDone); err != nil {
		t.Fatalf("no marker after the backfill: %v", err)
	}
}
