package imgbed

import (
	"crypto/sha256"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// tokenSet finds tokens by the SHA-256 of their secret, so a lookup takes
// the same time whatever prefix of a secret a client guessed.
type tokenSet struct {
	bySecret map[sum]*Token
	byName   map[string]*Token
}

func newTokenSet(tokens []Token) *tokenSet {
	ts := &tokenSet{bySecret: make(map[sum]*Token), byName: make(map[string]*Token)}
	for i := range tokens {
		t := tokens[i]
		if t.Secret == "" {
			continue
		}
		ts.bySecret[sha256.Sum256([]byte(t.Secret))] = &t
		ts.byName[t.Name] = &t
	}
	return ts
}

// credential returns the token a request presents, in the places real
// clients put it: "Authorization: Bearer T" or a bare "Authorization: T",
// a "token" header (Lsky's clients), "X-API-Key", or "?key=" for CDNs that
// drop custom headers.
func credential(r *http.Request) string {
	if a := strings.TrimSpace(r.Header.Get("Authorization")); a != "" {
		if t, ok := strings.CutPrefix(a, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
		return a
	}
	for _, name := range []string{"Token", "X-API-Key"} {
		if t := strings.TrimSpace(r.Header.Get(name)); t != "" {
			return t
		}
	}
	return r.URL.Query().Get("key")
}

var (
	errBadToken      = &apiError{http.StatusUnauthorized, "auth", "invalid token"}
	errTokenRequired = &apiError{http.StatusUnauthorized, "auth", "token required"}
	errAdminRequired = &apiError{http.StatusUnauthorized, "auth", "admin token required"}
)

// identify returns the request's token: nil for a request without one.
// A credential that matches no token is an error even where anonymous
// uploads are allowed, so a mistyped token never silently uploads
// anonymously.
func (h *Host) identify(r *http.Request) (*Token, error) {
	c := credential(r)
	if c == "" {
		return nil, nil
	}
	s := sha256.Sum256([]byte(c))
	t := h.auth.Load().bySecret[s]
	if t == nil {
		// A token Lsky's login issued (tokens.go)?
		var err error
		if t, err = h.issuedToken(s); err != nil {
			return nil, err
		}
	}
	if t == nil {
		return nil, errBadToken
	}
	return t, nil
}

// anonymousAllowed applies Config.Anonymous to r. AnonymousAuto looks at
// the address the connection arrived on, not at the peer: a reverse proxy
// on the same host makes every peer loopback, but it connects to an
// address the operator chose to publish only if it is not loopback.
func (h *Host) anonymousAllowed(r *http.Request) bool {
	switch h.cfg.Anonymous {
	case AnonymousOn:
		return true
	case AnonymousOff:
		return false
	}
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clientIP is the peer address without its port.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// rateLimiter is a token bucket per client.
type rateLimiter struct {
	rate  float64 // tokens per second; <0: unlimited
	burst float64

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets bounds the limiter's memory; beyond it, buckets that have
// refilled completely (and so carry no state) are dropped.
const maxBuckets = 1 << 14

func newRateLimiter(rate float64, burst int) *rateLimiter {
	return &rateLimiter{rate: rate, burst: float64(burst), buckets: make(map[string]*bucket)}
}

// allow takes one token from client's bucket. When the bucket is empty it
// returns how long until the next token, for the client's Retry-After.
func (l *rateLimiter) allow(client string, now time.Time) (ok bool, wait time.Duration) {
	if l.rate < 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[client]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.pruneLocked(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[client] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	}
	b.tokens--
	return true, 0
}

func (l *rateLimiter) pruneLocked(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}
