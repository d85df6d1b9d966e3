package server

import (
	"testing"
	"time"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "abc", true},
		{"a*", "abc", true},
		{"a*c", "abbbc", true},
		{"a*c", "abcd", false},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[b-a]llo", "hallo", true},
		{"h[a-b]llo", "hcllo", false},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{`[\]]`, "]", true},
		{"[abc", "b", true},
		{"[", "[", false},
		{"*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"user:*:name", "user:42:name", true},
		{"", "", true},
		{"", "a", false},
	} {
		if got := globMatch([]byte(tc.pattern), []byte(tc.s), false); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pattern, tc.s, got)
		}
	}
	if !globMatch([]byte("MAX*"), []byte("maxclients"), true) || globMatch([]byte("MAX*"), []byte("maxclients"), false) {
		t.Error("nocase")
	}
}

// refMatch is a direct recursive transcription of the glob rules, slow
// but obviously right, to check globMatch against.
func refMatch(p, s []byte) bool {
	if len(p) == 0 {
		return len(s) == 0
	}
	if p[0] == '*' {
		for i := 0; i <= len(s); i++ {
			if refMatch(p[1:], s[i:]) {
				return true
			}
		}
		return false
	}
	if len(s) == 0 {
		return false
	}
	width, ok := matchOne(p, s[0], false)
	return ok && refMatch(p[width:], s[1:])
}

func TestGlobMatchRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := newRand(seed)
	const alphabet = "ab*?[]^-\\"
	for range 20000 {
		p := make([]byte, rng.IntN(7))
		for i := range p {
			p[i] = alphabet[rng.IntN(len(alphabet))]
		}
		s := make([]byte, rng.IntN(6))
		for i := range s {
			s[i] = "ab]-"[rng.IntN(4)]
		}
		if got, want := globMatch(p, s, false), refMatch(p, s); got != want {
			t.Fatalf("seed %d: globMatch(%q, %q) = %v, reference %v", seed, p, s, got, want)
		}
		if pre := literalPrefix(p); globMatch(p, s, false) && string(s[:min(len(pre), len(s))]) != string(pre) {
			t.Fatalf("literalPrefix(%q) = %q does not prefix match %q", p, pre, s)
		}
	}
}
