package imgbed

import (
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lsmgo-dev/lsmgo"
)

// Albums belong to the token that made them; an admin token may manage
// any. An album holds images of its owner (or, added by an admin, of
// anyone), lists them newest upload first, and is public under /a/{id}
// like the images themselves: the id is as hard to guess as an image's.

var (
	errAlbumName = &apiError{http.StatusBadRequest, "bad_request", "an album needs a name of at most 100 characters"}
	errNotOwner  = &apiError{http.StatusForbidden, "forbidden", "not your album or image"}
)

// albumByOwnerKey indexes a token's albums, newest first.
func albumByOwnerKey(a *album) []byte {
	return append(append(key(kindAlbumOf, []byte(a.Owner), []byte{0}), newestFirst(a.Created)...), a.ID...)
}

// albumData is the client's view of an album.
type albumData struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Owner       string `json:"owner"`
	Created     string `json:"created"`
	URL         string `json:"url"`
}

func (h *Host) albumData(r *http.Request, a *album) albumData {
	return albumData{ID: a.ID, Name: a.Name, Description: a.Description, Owner: a.Owner,
		Created: timeText(a.Created), URL: h.baseURL(r) + "/a/" + a.ID}
}

// albumFields reads name and description from a JSON or form body.
func albumFields(r *http.Request) (name, desc string, err error) {
	var in struct{ Name, Description string }
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(io.LimitReader(r.Body, maxFormField)).Decode(&in); err != nil {
			return "", "", &apiError{http.StatusBadRequest, "bad_request", "malformed JSON"}
		}
	} else {
		r.Body = http.MaxBytesReader(nil, r.Body, maxFormField)
		in.Name, in.Description = r.FormValue("name"), r.FormValue("description")
	}
	in.Name, in.Description = strings.TrimSpace(in.Name), strings.TrimSpace(in.Description)
	if utf8.RuneCountInString(in.Description) > 1000 {
		return "", "", &apiError{http.StatusBadRequest, "bad_request", "description longer than 1000 characters"}
	}
	return in.Name, in.Description, nil
}

func timeText(unixNano int64) string { return time.Unix(0, unixNano).UTC().Format(time.RFC3339) }

func validAlbumName(s string) bool { return s != "" && utf8.RuneCountInString(s) <= 100 }

func (h *Host) serveAlbumCreate(w http.ResponseWriter, r *http.Request) {
	t, err := h.tokenHolder(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	name, desc, err := albumFields(r)
	if err == nil && !validAlbumName(name) {
		err = errAlbumName
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	a := &album{V: recordVersion, Name: name, Description: desc, Owner: t.Name, Created: h.now().UnixNano()}
	for range 8 {
		a.ID = randomString(idLen)
		if err = h.st.createAlbum(a); !errors.Is(err, errIDTaken) {
			break
		}
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"status": true, "message": "created", "data": h.albumData(r, a)})
}

// tokenHolder returns the request's token, which it must have.
func (h *Host) tokenHolder(r *http.Request) (*Token, error) {
	t, err := h.identify(r)
	if err == nil && t == nil {
		err = errTokenRequired
	}
	return t, err
}

// serveAlbums lists the caller's albums, newest first.
func (h *Host) serveAlbums(w http.ResponseWriter, r *http.Request) {
	t, err := h.tokenHolder(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	p := pageOf(r)
	prefix := key(kindAlbumOf, []byte(t.Name), []byte{0})
	lo, hi := span(prefix)
	snap := h.st.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		h.fail(w, err)
		return
	}
	defer it.Close()
	items := []albumData{}
	skip := (p.page - 1) * p.per
	for ok := it.First(); ok; ok = it.Next() {
		if skip > 0 {
			skip--
			continue
		}
		if len(items) == p.per {
			p.more = true
			break
		}
		var a album
		if err := getJSON(snap, albumKey(string(it.Key()[len(prefix)+8:])), &a, "album"); err != nil {
			h.fail(w, err)
			return
		}
		items = append(items, h.albumData(r, &a))
	}
	if err := it.Error(); err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "", "data": p.body(items)})
}

// serveAlbum answers an album and a page of its images; it is public.
func (h *Host) serveAlbum(w http.ResponseWriter, r *http.Request) {
	a, items, p, err := h.albumImages(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	body := p.body(items)
	body["album"] = h.albumData(r, a)
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "", "data": body})
}

// albumImages reads the album of the request's path and the requested
// page of its images.
func (h *Host) albumImages(r *http.Request) (*album, []imageData, paging, error) {
	a, err := h.st.album(r.PathValue("id"))
	if err != nil {
		return nil, nil, paging{}, err
	}
	items, p, err := h.listImages(r, memberPrefix(a.ID))
	return a, items, p, err
}

// mayAddTo reports whether an upload with token t may go into album id:
// it exists and is t's, or t is an admin's.
func (h *Host) mayAddTo(id string, t *Token) error {
	a, err := h.st.album(id)
	switch {
	case err != nil:
		return err
	case t == nil || a.Owner != t.Name && !t.Admin:
		return errNotOwner
	}
	return nil
}

// ownedAlbum is the album of the request's path, which its token must own
// (or be an admin).
func (h *Host) ownedAlbum(r *http.Request) (*Token, *album, error) {
	t, err := h.tokenHolder(r)
	if err != nil {
		return nil, nil, err
	}
	a, err := h.st.album(r.PathValue("id"))
	if err != nil {
		return nil, nil, err
	}
	if a.Owner != t.Name && !t.Admin {
		return nil, nil, errNotOwner
	}
	return t, a, nil
}

// serveAlbumEdit renames an album or changes its description.
func (h *Host) serveAlbumEdit(w http.ResponseWriter, r *http.Request) {
	_, a, err := h.ownedAlbum(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	name, desc, err := albumFields(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	if name != "" && !validAlbumName(name) {
		h.fail(w, errAlbumName)
		return
	}
	a, err = h.st.editAlbum(a.ID, name, desc)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "updated", "data": h.albumData(r, a)})
}

func (h *Host) serveAlbumDelete(w http.ResponseWriter, r *http.Request) {
	_, a, err := h.ownedAlbum(r)
	if err == nil {
		err = h.st.deleteAlbum(a)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "deleted"})
}

// serveAlbumMember adds (PUT) or removes (DELETE) an image. Only the
// owner of both, or an admin, may.
func (h *Host) serveAlbumMember(w http.ResponseWriter, r *http.Request) {
	t, a, err := h.ownedAlbum(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	id := r.PathValue("key")
	rec, err := h.st.record(id)
	if !validID(id) || errors.Is(err, errNotFound) {
		h.fail(w, errNotFound)
		return
	}
	if err == nil && rec.Owner != t.Name && !t.Admin {
		err = errNotOwner
	}
	if err == nil {
		err = h.st.setMember(a.ID, rec, r.Method == http.MethodPut)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "ok"})
}

var albumPage = template.Must(template.New("album").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>{{.Album.Name}}</title><link rel="stylesheet" href="/assets/style.css"></head>
<body><header><h1>{{.Album.Name}}</h1></header><main>{{with .Album.Description}}<p class="hint">{{.}}</p>{{end}}
<div id="grid">{{range .Images}}<a href="{{.Links.URL}}" title="{{.OriginName}}"><img loading="lazy" alt="{{.OriginName}}" src="{{.Links.ThumbnailURL}}"></a>{{end}}</div>
{{if .Next}}<p><a href="{{.Next}}">→</a></p>{{end}}</main></body></html>`))

// serveAlbumPage is the public page of an album: its images' thumbnails,
// each a link to the original.
func (h *Host) serveAlbumPage(w http.ResponseWriter, r *http.Request) {
	a, items, p, err := h.albumImages(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	next := ""
	if p.more {
		next = "?page=" + itoa(p.page+1)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pagePolicy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	albumPage.Execute(w, struct {
		Album  *album
		Images []imageData
		Next   string
	}{a, items, next})
}
