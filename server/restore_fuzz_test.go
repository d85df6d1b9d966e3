package server

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/rdb"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// FuzzRestore feeds RESTORE's decoder arbitrary serialized values (the
// part of a payload the checksum covers, so that the fuzzer is not
// stopped by it). Whatever the input, decoding must fail with an error
// or succeed, never panic; and a value it accepts must dump to a payload
// that restores to a value dumping the same bytes again.
func FuzzRestore(f *testing.F) {
	var lp rdb.ListpackWriter
	for _, s := range []string{"a", "1", "-300", "70000", "x\x00y", "2147483648"} {
		lp.Append([]byte(s))
	}
	pairs := lp.Finish()
	ziplist := []byte{17, 0, 0, 0, 12, 0, 0, 0, 2, 0, 1, 'a', 2, 0xf3, 0xff}
	for _, seed := range [][]byte{
		{rdb.TypeString, 3, 'a', 'b', 'c'},
		{rdb.TypeString, 0xc2, 1, 2, 3, 4},
		{rdb.TypeString, 0xc3, 4, 6, 1, 'a', 'b', 0x20, 1},
		{rdb.TypeList, 2, 1, 'a', 0xc0, 7},
		{rdb.TypeZSet, 1, 1, 'm', 3, '1', '.', '5'},
		{rdb.TypeZSet2, 1, 1, 'm', 0, 0, 0, 0, 0, 0, 0xf0, 0x3f},
		append([]byte{rdb.TypeHashListpack, byte(len(pairs))}, pairs...),
		append([]byte{rdb.TypeZSetListpack, byte(len(pairs))}, pairs...),
		append([]byte{rdb.TypeListQuicklist2, 2, rdb.ContainerPacked, byte(len(pairs))}, append(pairs, rdb.ContainerPlain, 1, 'z')...),
		append([]byte{rdb.TypeSetIntset, 12}, []byte{2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 5, 0}...),
		append([]byte{rdb.TypeHashZiplist, byte(len(ziplist))}, ziplist...),
		append([]byte{rdb.TypeListQuicklist, 1, byte(len(ziplist))}, ziplist...),
		goodStreamPayload().body(),
		[]byte(legacyStreamPayload[:len(legacyStreamPayload)-10]),
	} {
		f.Add(seed)
	}
	db, err := lsmgo.Open("/db", &lsmgo.Options{FS: vfs.NewMem(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	vc, err := newVersionClock(db)
	if err != nil {
		f.Fatal(err)
	}
	ks := &keyspace{db: db, versions: vc}
	restoreDump := func(key, body []byte) ([]byte, error) {
		var scratch keyBuf
		b := db.NewBatch()
		if err := ks.restoreValue(b, &scratch, key, body, time.Time{}, 1<<20); err != nil {
			return nil, err
		}
		if err := db.Apply(b, nil); err != nil {
			return nil, err
		}
		e, _, err := ks.getEntry(db, &scratch, key)
		if err != nil {
			f.Fatalf("reading back a restored value: %v", err)
		}
		return ks.dumpValue(db, key, e, 1<<30)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		first, err := restoreDump([]byte("a"), body)
		if err != nil {
			return
		}
		inner, err := rdb.Open(first)
		if err != nil {
			t.Fatalf("DUMP wrote a payload it cannot open: %v", err)
		}
		second, err := restoreDump([]byte("b"), inner)
		if err != nil {
			t.Fatalf("RESTORE refused what DUMP wrote (%v): %x", err, first)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("dump of a restored dump differs:\n%x\n%x", first, second)
		}
	})
}
