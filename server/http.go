package server

import (
	"crypto/subtle"
	"expvar"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lsmgo-dev/lsmgo/server/internal/httpfront"
)

// httpHandler serves /metrics and /healthz to anyone who can reach the
// HTTP address, the image host at / when it is on, and /debug/pprof/,
// /debug/vars and /admin/backup only to requests bearing the admin token
// or, without the image host, to loopback clients: profiles expose memory contents and
// cost CPU, and a public image host is often behind a reverse proxy on the
// same host, which makes every visitor loopback.
func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.readsDB(promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})))
	mux.Handle("/healthz", s.readsDB(http.HandlerFunc(s.serveHealth)))
	debug := http.NewServeMux()
	debug.HandleFunc("/debug/pprof/", pprof.Index)
	debug.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	debug.HandleFunc("/debug/pprof/profile", pprof.Profile)
	debug.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	debug.HandleFunc("/debug/pprof/trace", pprof.Trace)
	debug.Handle("/debug/vars", expvar.Handler())
	mux.Handle("/debug/", s.adminOnly(debug))
	mux.Handle("/admin/backup", s.adminOnly(s.readsDB(http.HandlerFunc(s.serveBackup))))
	if s.images != nil {
		// Through imagesHandler, which a replica's full sync replaces.
		s.imagesHandler = s.images.Handler()
		mux.Handle("/", s.slowHTTP(s.readsDB(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.imagesHandler.ServeHTTP(w, r)
		}))))
	}
	return mux
}

// serveHealth answers 200 while the engine accepts writes and 503 once a
// background error has made it read-only, so a load balancer can drain it.
func (s *Server) serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.db.Metrics().ReadOnly {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("read-only: a background error stopped writes\n"))
		return
	}
	w.Write([]byte("ok\n"))
}

// slowHTTP enters requests slower than slowlog-log-slower-than in the slow
// log as "METHOD path", so slow uploads and downloads show up next to
// slow commands. An upload's time includes receiving its body.
func (s *Server) slowHTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		s.noteSlowHTTP(func() string { return r.RemoteAddr }, r.Method, r.URL.Path, start)
	})
}

// noteSlowHTTP enters a request that started at start in the slow log if
// it was slow.
func (s *Server) noteSlowHTTP(remote func() string, method, path string, start time.Time) {
	d := time.Since(start)
	if cfg := s.config(); cfg.SlowlogSlowerThan >= 0 && d >= cfg.SlowlogSlowerThan {
		s.slowlog.addFrom(remote(), "http", [][]byte{[]byte(method), []byte(path)}, d, cfg.SlowlogMaxLen)
	}
}

// servePlain answers the plain GETs and HEADs of originals and
// thumbnails on the HTTP connection itself (httpfront, Host.ServePlain),
// as the image host's routes below would, slow log included.
func (s *Server) servePlain(w *httpfront.Writer, r *httpfront.Request) bool {
	start := time.Now()
	s.repl.swapMu.RLock()
	served := s.images.ServePlain(w, r)
	s.repl.swapMu.RUnlock()
	if served {
		s.noteSlowHTTP(r.RemoteAddr, r.Method, r.Path, start)
	}
	return served
}

// adminOnly lets a request through with the admin token, or without the
// image host from loopback. It asks the setting, not s.images, which a
// replica's full sync replaces while requests run.
func (s *Server) adminOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (s.config().Images || !isLoopbackRemote(r.RemoteAddr)) && !s.hasAdminToken(r) {
			http.Error(w, "forbidden: "+r.URL.Path+" needs the admin token (or, without the image host, a loopback client)", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) hasAdminToken(r *http.Request) bool {
	token := s.config().AdminToken
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

func isLoopbackRemote(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
