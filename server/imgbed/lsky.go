package imgbed

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/lsmgo-dev/lsmgo"
)

// Lsky Pro's V1 API routes beyond upload, image delete and listing, for
// its clients (PicGo's and Typora's Lsky plugins, scripts). lsmgo has no
// user accounts: Lsky's email is a token's name and its password the
// token's secret, with which the login issues a token (tokens.go).

var errLogin = &apiError{http.StatusUnauthorized, "auth", "wrong name or secret"}

// serveTokens answers POST /api/v1/tokens, which Lsky clients call to
// turn an email and a password into a token: a new one, issued to the
// token whose name and secret they are, which DELETE revokes (tokens.go).
func (h *Host) serveTokens(w http.ResponseWriter, r *http.Request) {
	var in struct{ Email, Password string }
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		json.NewDecoder(io.LimitReader(r.Body, maxFormField)).Decode(&in)
	} else {
		r.Body = http.MaxBytesReader(nil, r.Body, maxFormField)
		in.Email, in.Password = r.FormValue("email"), r.FormValue("password")
	}
	t := h.auth.Load().bySecret[sha256.Sum256([]byte(in.Password))]
	// Both compared whatever happens, in constant time: a wrong name and
	// a wrong secret are told apart by nothing.
	nameOK := t != nil && subtle.ConstantTimeCompare([]byte(t.Name), []byte(in.Email)) == 1
	if in.Password == "" || !nameOK {
		h.fail(w, errLogin)
		return
	}
	issued, err := h.issueToken(t)
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "success", "data": map[string]string{"token": issued}})
}

// serveProfile answers Lsky's GET /api/v1/profile: the token's name and
// usage (capacities in KiB, as Lsky counts them).
func (h *Host) serveProfile(w http.ResponseWriter, r *http.Request) {
	t, err := h.tokenHolder(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	u, err := h.st.usage(t.Name)
	if err != nil {
		h.fail(w, err)
		return
	}
	albums, err := countPrefix(h.st.db, key(kindAlbumOf, []byte(t.Name), []byte{0}))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "success", "data": map[string]any{
		"name": t.Name, "email": t.Name, "url": h.baseURL(r),
		"capacity": float64(t.QuotaBytes) / 1024, "used_capacity": float64(u.Bytes) / 1024,
		"image_num": u.Count, "album_num": albums,
	}})
}

// serveStrategies answers Lsky's GET /api/v1/strategies: lsmgo has one
// storage strategy, itself; an upload's strategy_id is ignored.
func (h *Host) serveStrategies(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "success", "data": map[string]any{
		"strategies": []map[string]any{{"id": 1, "name": "lsmgo"}},
	}})
}

func countPrefix(db *lsmgo.DB, p []byte) (int, error) {
	lo, hi := span(p)
	it, err := db.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Error()
}
