package imgbed

import (
	"net/http"
	"slices"
	"strings"
)

// routes answers what the mux alone would answer in Go's plain text: a
// path no route has (404) and a method the path does not take (405, with
// Allow) get the JSON error every other failure gets, since uploader
// clients parse the body of every error. It also applies the CORS
// settings before any route.
type routes struct {
	h   *Host
	mux *http.ServeMux
}

func (rt routes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rt.h.applyCORS(w, r) {
		return
	}
	handler, pattern := rt.mux.Handler(r)
	if pattern != "" {
		if reason := rt.h.writeRefusal(r); reason != "" {
			rt.h.fail(w, &apiError{http.StatusServiceUnavailable, "read_only", reason})
			return
		}
		rt.mux.ServeHTTP(w, r) // sets the path values Handler does not
		return
	}
	// No pattern: the mux's own 404 or 405 handler. Run it into a probe
	// to learn which, and the Allow header it computed.
	probe := &headerProbe{header: http.Header{}}
	handler.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		rt.h.fail(w, errMethod)
		return
	}
	rt.h.fail(w, errNoRoute)
}

// writeRefusal returns why r, a write, is refused now (Config.WriteRefusal),
// or "". Every route that writes takes POST, PUT, PATCH or DELETE.
func (h *Host) writeRefusal(r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	if h.cfg.WriteRefusal == nil {
		return ""
	}
	return h.cfg.WriteRefusal()
}

// errViewsOnPrimary refuses a view-limited image on a replica.
var errViewsOnPrimary = &apiError{http.StatusServiceUnavailable, "read_only", "this server is a read-only replica: a view-limited image is served by its primary"}

var (
	errNoRoute = &apiError{http.StatusNotFound, "not_found", "no such route"}
	errMethod  = &apiError{http.StatusMethodNotAllowed, "method", "method not allowed"}
)

// headerProbe is a ResponseWriter that keeps the header and status and
// drops the body.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(status int)      { p.status = status }

// corsHeaders are the request headers a browser client on another origin
// may send: the places a token goes, the delete token, and tus's.
const corsHeaders = "Authorization, Content-Type, Token, X-API-Key, X-Delete-Token, " +
	"Tus-Resumable, Upload-Length, Upload-Metadata, Upload-Offset, Upload-Checksum, X-HTTP-Method-Override"

// corsExposed are the answer headers such a client may read: tus clients
// resume from Upload-Offset and find an upload at Location.
const corsExposed = "Retry-After, ETag, Location, Content-Length, " +
	"Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Upload-Offset, Upload-Length, Upload-Metadata, Upload-Expires, X-Image-URL"

// addVary adds v to a response's Vary header unless it is there: CORS
// (Origin), thumbnail negotiation (Accept) and the page each name what
// their answer depends on, and one must not replace another's.
func addVary(hd http.Header, v string) {
	if !slices.Contains(hd.Values("Vary"), v) {
		hd.Add("Vary", v)
	}
}

// applyCORS adds the CORS headers for an allowed Origin
// (Config.CORSOrigins) and answers a preflight itself, returning true.
// Without the setting, browsers keep other origins' scripts out, as
// before; images embedded with <img> need no CORS.
func (h *Host) applyCORS(w http.ResponseWriter, r *http.Request) bool {
	if len(h.cfg.CORSOrigins) == 0 {
		return false
	}
	anyOrigin := slices.Contains(h.cfg.CORSOrigins, "*")
	if !anyOrigin {
		addVary(w.Header(), "Origin")
	}
	origin := r.Header.Get("Origin")
	if origin == "" || !anyOrigin && !slices.ContainsFunc(h.cfg.CORSOrigins, func(o string) bool { return strings.EqualFold(o, origin) }) {
		return false
	}
	if anyOrigin {
		w.Header().Set("Access-Control-Allow-Origin", "*")
	} else {
		w.Header().Set("Access-Control-Allow-Origin", origin)
	}
	w.Header().Set("Access-Control-Expose-Headers", corsExposed)
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	w.Header().Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PATCH, DELETE")
	w.Header().Set("Access-Control-Allow-Headers", corsHeaders)
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}
