package imgbed

import (
	"net/http"

	"github.com/lsmgo-dev/lsmgo"
	"strconv"
	"strings"
	"time"
)

// uploadOptions are what a client may ask of the files of one upload.
type uploadOptions struct {
	expiresIn time.Duration // 0: never
	maxViews  int64         // 0: unlimited
	albumID   string        // Lsky's album_id: an album of the uploader's to add the files to
	md5       bool          // compute the files' MD5 (wantsMD5)
	// commitWith, when set, adds to the batch that makes the image
	// visible what must become true with it and never without it (a
	// finished resumable upload's outcome).
	commitWith func(b *lsmgo.Batch, done uploaded)
}

// maxExpiry bounds an expiry, so the expiry time cannot overflow.
const maxExpiry = 100 * 365 * 24 * time.Hour

var (
	errBadExpiry   = &apiError{http.StatusBadRequest, "bad_request", "expiration must be an ISO-8601 duration (PT1H, P7D, P1M) or seconds, up to 100 years"}
	errBadMaxViews = &apiError{http.StatusBadRequest, "bad_request", "max_views must be a positive integer"}
)

// requestOptions reads the options a request carries in its query
// (?expiration=, ?max_views=, ?album_id=) or headers (X-Expiration,
// X-Max-Views);
// multipart fields of the same names, before a file, override them
// (setOption).
func requestOptions(r *http.Request) (uploadOptions, error) {
	o := uploadOptions{md5: wantsMD5(r)}
	for _, name := range []string{"expiration", "max_views", "album_id"} {
		v := r.URL.Query().Get(name)
		if v == "" {
			v = r.Header.Get(map[string]string{"expiration": "X-Expiration", "max_views": "X-Max-Views"}[name])
		}
		if err := o.set(name, v); err != nil {
			return o, err
		}
	}
	return o, nil
}

// isOption reports whether a form field is an upload option.
func isOption(field string) bool {
	return field == "expiration" || field == "max_views" || field == "album_id"
}

// set applies one option; an empty value leaves it alone.
func (o *uploadOptions) set(name, v string) error {
	if v == "" {
		return nil
	}
	switch name {
	case "expiration":
		d, ok := parseExpiry(v)
		if !ok {
			return errBadExpiry
		}
		o.expiresIn = d
	case "max_views":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return errBadMaxViews
		}
		o.maxViews = n
	case "album_id":
		if !validID(v) {
			return errNotFound
		}
		o.albumID = v
	}
	return nil
}

// parseExpiry reads an expiry as Chevereto and Zipline clients send it:
// an ISO-8601 duration (PnYnMnWnDTnHnMnS, integer parts, a year taken as
// 365 days and a month as 30) or a number of seconds. Zero means never.
func parseExpiry(v string) (time.Duration, bool) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		d := time.Duration(n) * time.Second
		return d, n >= 0 && n <= int64(maxExpiry/time.Second)
	}
	if len(v) < 3 || v[0] != 'P' {
		return 0, false
	}
	const day = 24 * time.Hour
	dateUnits := map[byte]time.Duration{'Y': 365 * day, 'M': 30 * day, 'W': 7 * day, 'D': day}
	timeUnits := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second}
	units, inTime := dateUnits, false
	total, digits, parts := time.Duration(0), "", 0
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9':
			digits += string(c)
		case c == 'T' && !inTime && digits == "":
			units, inTime, parts = timeUnits, true, 0 // PT alone is no duration
		default:
			unit, ok := units[c]
			n, err := strconv.ParseInt(digits, 10, 64)
			if !ok || err != nil || n > int64(maxExpiry/unit) {
				return 0, false
			}
			delete(units, c) // each part once
			total += time.Duration(n) * unit
			digits = ""
			parts++
			if total > maxExpiry {
				return 0, false
			}
		}
	}
	return total, digits == "" && parts > 0
}

// wantsMD5 reports whether an upload's answer should carry the files' MD5
// (the "md5" of Lsky Pro's answer): when the client is a Lsky client,
// which sends "Accept: application/json" as Lsky Pro's API asks of every
// call, or asks with ?md5=1. Others get "md5": "" and do not pay for it:
// MD5 was 14% of an upload's CPU, twice the SHA-256 that identifies the
// bytes (issue 22).
func wantsMD5(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json") || r.URL.Query().Get("md5") == "1"
}
