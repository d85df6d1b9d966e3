package imgbed

import (
	"net/url"
	"strings"
	"testing"
)

// TestLskyRevokeTokens: Lsky's login issues a new token each time, each
// acting as the configured one; DELETE /api/v1/tokens revokes every
// token issued to the caller's name (and no one else's), while the
// configured secret, Lsky's password, keeps working and can log in
// again. A token whose name leaves the configuration stops working.
func TestLskyRevokeTokens(t *testing.T) {
	tokens := []Token{{Name: "alice", Secret: "alice-secret"}, {Name: "bob", Secret: "bob-secret"}}
	th := newTestHost(t, Config{Anonymous: AnonymousOff, Tokens: tokens})
	login := func(name string) string {
		t.Helper()
		var tok struct{ Token string }
		form := url.Values{"email": {name}, "password": {name + "-secret"}}.Encode()
		if st := th.call(t, "POST", "/api/v1/tokens", "", strings.NewReader(form), "application/x-www-form-urlencoded", &tok); st != 200 {
			t.Fatalf("login %s: %d", name, st)
		}
		return tok.Token
	}
	profile := func(token string) int {
		t.Helper()
		return th.call(t, "GET", "/api/v1/profile", token, nil, "", nil)
	}
	a1, a2, b := login("alice"), login("alice"), login("bob")
	if a1 == a2 || a1 == "alice-secret" {
		t.Fatalf("issued %q and %q", a1, a2)
	}
	var p struct{ Name string }
	if th.call(t, "GET", "/api/v1/profile", a2, nil, "", &p); p.Name != "alice" {
		t.Fatalf("an issued token acts as %q", p.Name)
	}
	if st := th.call(t, "DELETE", "/api/v1/tokens", "", nil, "", nil); st != 401 {
		t.Errorf("revoke without a token: %d", st)
	}
	var out struct{ Revoked int }
	if st := th.call(t, "DELETE", "/api/v1/tokens", a1, nil, "", &out); st != 200 || out.Revoked != 2 {
		t.Fatalf("revoke: %d %+v", st, out)
	}
	for token, want := range map[string]int{a1: 401, a2: 401, b: 200, "alice-secret": 200} {
		if st := profile(token); st != want {
			t.Errorf("profile with %q after the revoke: %d, want %d", token, st, want)
		}
	}
	a3 := login("alice")
	if st := profile(a3); st != 200 {
		t.Errorf("a login after the revoke: %d", st)
	}
	if st := th.call(t, "DELETE", "/api/v1/tokens", "alice-secret", nil, "", &out); st != 200 || out.Revoked != 1 || profile(a3) != 401 {
		t.Errorf("revoke with the secret: %d %+v", st, out)
	}
	th.SetTokens(tokens[:1])
	if st := profile(b); st != 401 {
		t.Errorf("a token issued to a name no longer configured: %d", st)
	}
}
