package imgbed

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"net/http"

	"github.com/lsmgo-dev/lsmgo"
)

// Tokens issued by Lsky Pro's login (POST /api/v1/tokens) and revoked by
// its logout (DELETE /api/v1/tokens). A configured token's secret plays
// Lsky's password: logging in with it issues a new random token that
// acts as the configured one (same name, quota and admin flag) until
// revoked, and revoking clears every token issued to that name, as Lsky
// clears a user's tokens. Secrets themselves are configuration
// (image-tokens) and change there.
//
//	"iK" sha256(token)        the name it was issued to
//	"iJ" name 0 sha256(token) the tokens issued to a name, to revoke them

// issuedLen makes issued tokens as strong as a 256-bit key, near enough:
// 43 base62 characters are 256 bits.
const issuedLen = 43

func issuedKey(h sum) []byte { return key(kindIssued, h[:]) }

func issuedByPrefix(name string) []byte { return key(kindIssuedBy, []byte(name), []byte{0}) }

// issueToken makes a new token acting as t.
func (h *Host) issueToken(t *Token) (string, error) {
	secret := randomString(issuedLen)
	s := sum(sha256.Sum256([]byte(secret)))
	b := h.st.db.NewBatch()
	b.Set(issuedKey(s), []byte(t.Name))
	b.Set(append(issuedByPrefix(t.Name), s[:]...), nil)
	return secret, h.st.db.Apply(b, nil)
}

// issuedToken returns the configured token that an issued token with
// hash s acts as: nil when none was issued, it was revoked, or its name
// is no longer configured.
func (h *Host) issuedToken(s sum) (*Token, error) {
	name, err := h.st.db.Get(issuedKey(s))
	if errors.Is(err, lsmgo.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return h.auth.Load().byName[string(name)], nil
}

// revokeTokens deletes every token issued to name, in one batch.
func (h *Host) revokeTokens(name string) (int, error) {
	lo, hi := span(issuedByPrefix(name))
	it, err := h.st.db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	b := h.st.db.NewBatch()
	for ok := it.First(); ok; ok = it.Next() {
		s := bytes.TrimPrefix(it.Key(), lo)
		if len(s) != sumLen {
			continue
		}
		b.Delete(issuedKey(sum(s)))
		b.Delete(bytes.Clone(it.Key()))
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	return int(b.Count() / 2), h.st.db.Apply(b, nil)
}

// serveRevokeTokens answers Lsky's DELETE /api/v1/tokens: the caller's
// issued tokens, the one it calls with included, stop working.
func (h *Host) serveRevokeTokens(w http.ResponseWriter, r *http.Request) {
	t, err := h.tokenHolder(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	n, err := h.revokeTokens(t.Name)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "success", "data": map[string]any{"revoked": n}})
}
