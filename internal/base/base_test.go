package base

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestFilenameRoundTrip(t *testing.T) {
	for _, ft := range []FileType{FileTypeLog, FileTypeTable, FileTypeManifest, FileTypeTemp, FileTypeBlob} {
		for _, n := range []FileNum{0, 1, 999999, 1000000, 1 << 40} {
			name := MakeFilename(ft, n)
			gt, gn, ok := ParseFilename(name)
			if !ok || gt != ft || gn != n {
				t.Errorf("%s: parsed as %v %d %v", name, gt, gn, ok)
			}
		}
	}
	for _, name := range []string{"CURRENT", "LOCK", "OPTIONS"} {
		if _, _, ok := ParseFilename(name); !ok {
			t.Errorf("%s not recognized", name)
		}
	}
	for _, name := range []string{"", ".log", "12a.sst", "000001.txt", "MANIFEST-", "MANIFEST-x", "MANIFEST-1", "current"} {
		if ft, n, ok := ParseFilename(name); ok {
			t.Errorf("%q parsed as %v %d", name, ft, n)
		}
	}
}

// TestInternalKeyOrder checks CompareInternal, CompareEncoded and the
// encoding against the definition: user key ascending, then sequence
// number descending, then kind descending.
func TestInternalKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]InternalKey, 500)
	for i := range keys {
		uk := make([]byte, rng.IntN(4))
		for j := range uk {
			uk[j] = byte('a' + rng.IntN(3))
		}
		keys[i] = MakeInternalKey(uk, SeqNum(rng.IntN(20)), Kind(rng.IntN(int(KindMax)+1)))
	}
	want := slices.Clone(keys)
	slices.SortFunc(want, func(a, b InternalKey) int {
		if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
			return c
		}
		if a.Seq() != b.Seq() {
			if a.Seq() > b.Seq() {
				return -1
			}
			return 1
		}
		return int(b.Kind()) - int(a.Kind())
	})
	got := slices.Clone(keys)
	slices.SortFunc(got, CompareInternal)
	enc := make([][]byte, len(keys))
	for i, k := range keys {
		enc[i] = k.Append(nil)
	}
	slices.SortFunc(enc, CompareEncoded)
	for i := range want {
		if CompareInternal(got[i], want[i]) != 0 {
			t.Fatalf("position %d: CompareInternal order %v, want %v", i, got[i], want[i])
		}
		dk, ok := DecodeInternalKey(enc[i])
		if !ok || CompareInternal(dk, want[i]) != 0 {
			t.Fatalf("position %d: encoded order %v, want %v", i, dk, want[i])
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	if _, ok := DecodeInternalKey([]byte("short")); ok {
		t.Error("7-byte key decoded")
	}
	bad := MakeInternalKey([]byte("k"), 1, KindMax).Append(nil)
	bad[len(bad)-8] = byte(KindMax) + 1
	if _, ok := DecodeInternalKey(bad); ok {
		t.Error("unknown kind decoded")
	}
	if _, _, ok := DecodeExpiryValue(make([]byte, ExpiryLen-1)); ok {
		t.Error("short expiry value decoded")
	}
	ms, v, ok := DecodeExpiryValue(EncodeExpiryValue(nil, 1234567, []byte("val")))
	if !ok || ms != 1234567 || string(v) != "val" {
		t.Errorf("expiry round trip: %d %q %v", ms, v, ok)
	}
}
