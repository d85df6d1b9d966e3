package imgbed

import (
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
)

// static holds the page's script, style and strings; the page loads
// nothing from elsewhere.
//
//go:embed static
var static embed.FS

var staticFS, _ = fs.Sub(static, "static")

// pageTemplate is the upload page, rendered in the visitor's language so
// it reads right before the script runs; the script switches language in
// place with the same strings (static/i18n.json).
//
//go:embed page.html
var pageHTML string

var (
	pageTemplate = template.Must(template.New("page").Parse(pageHTML))
	pageStrings  = mustStrings()
)

func mustStrings() map[string]map[string]string {
	b, err := fs.ReadFile(staticFS, "i18n.json")
	if err != nil {
		panic(err)
	}
	var m map[string]map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}

// langCookie keeps the language a visitor picked on the page.
const langCookie = "lsmgo-lang"

// pageLang chooses the page's language: ?lang=, then the visitor's
// choice on the page, then the most preferred language of
// Accept-Language that the page has, then English.
func pageLang(r *http.Request) string {
	if l := r.URL.Query().Get("lang"); pageStrings[l] != nil {
		return l
	}
	if c, err := r.Cookie(langCookie); err == nil && pageStrings[c.Value] != nil {
		return c.Value
	}
	best, bestQ := "en", 0.0
	for part := range strings.SplitSeq(r.Header.Get("Accept-Language"), ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		// "zh-CN", "zh-Hans-CN", "en-US": the primary subtag decides.
		primary, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if pageStrings[primary] != nil && q > bestQ {
			best, bestQ = primary, q
		}
	}
	return best
}

// pagePolicy lets the page load only its own script, style and the
// host's images.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func (h *Host) servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", pagePolicy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	addVary(w.Header(), "Accept-Language, Cookie")
	lang := pageLang(r)
	pageTemplate.Execute(w, struct {
		Lang string
		T    map[string]string
	}{lang, pageStrings[lang]})
}

func (h *Host) serveAsset(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.StripPrefix("/assets/", http.FileServerFS(staticFS)).ServeHTTP(w, r)
}

// configToken is the token to write into an uploader configuration: the
// caller's own, or for an admin the one named by ?for=. Anonymous callers
// get a configuration without one.
func (h *Host) configToken(r *http.Request) (string, error) {
	t, err := h.identify(r)
	if err != nil || t == nil {
		return "", err
	}
	if name := r.URL.Query().Get("for"); name != "" {
		if !t.Admin {
			return "", errAdminRequired
		}
		other := h.auth.Load().byName[name]
		if other == nil {
			return "", errNotFound
		}
		return other.Secret, nil
	}
	return t.Secret, nil
}

// serveShareX answers a ShareX custom uploader (.sxcu) for this host.
func (h *Host) serveShareX(w http.ResponseWriter, r *http.Request) {
	token, err := h.configToken(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	cfg := map[string]any{
		"Version":         "17.0.0",
		"Name":            "lsmgo " + r.Host,
		"DestinationType": "ImageUploader, FileUploader",
		"RequestMethod":   "POST",
		"RequestURL":      h.baseURL(r) + "/api/v1/upload",
		"Body":            "MultipartFormData",
		"FileFormName":    "file",
		"URL":             "{json:data.links.url}",
		"ThumbnailURL":    "{json:data.links.thumbnail_url}",
		"DeletionURL":     "{json:data.links.delete_url}",
		"ErrorMessage":    "{json:message}",
	}
	if token != "" {
		cfg["Headers"] = map[string]string{"Authorization": "Bearer " + token}
	}
	w.Header().Set("Content-Disposition", `attachment; filename="lsmgo.sxcu"`)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, cfg)
}

// servePicGo answers a PicGo configuration for its web-uploader plugin,
// whose jsonPath reads the top-level "url" of the upload response.
func (h *Host) servePicGo(w http.ResponseWriter, r *http.Request) {
	token, err := h.configToken(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	header := "{}"
	if token != "" {
		b, _ := json.Marshal(map[string]string{"Authorization": "Bearer " + token})
		header = string(b)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{
		"picBed": map[string]any{
			"uploader": "web-uploader",
			"current":  "web-uploader",
			"web-uploader": map[string]any{
				"url":          h.baseURL(r) + "/api/v1/upload",
				"paramName":    "file",
				"jsonPath":     "url",
				"customHeader": header,
				"customBody":   "",
			},
		},
		"picgoPlugins": map[string]bool{"picgo-plugin-web-uploader": true},
	})
}
