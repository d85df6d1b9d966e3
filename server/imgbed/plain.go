package imgbed

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/httpfront"
)

// ServePlain answers a plain GET or HEAD (httpfront) of an original or a
// stored thumbnail (?w=N alone) kept in the DB, byte for byte as Handler
// answers it (a 304 where If-None-Match or If-Modified-Since say so), and
// declines everything else before writing anything:
// errors, view-limited images, thumbnails not rendered yet, other render
// links, blobs in S3, and, with CORS on, what CORS changes. Bodies of at
// most plainCopyMax bytes are read and sent with the head in one
// writev(2), while plainCopyBudget allows; larger ones go out with
// sendfile(2).
func (h *Host) ServePlain(w *httpfront.Writer, r *httpfront.Request) bool {
	file, thumb := strings.CutPrefix(r.Path, "/t/")
	if !thumb {
		var ok bool
		if file, ok = strings.CutPrefix(r.Path, "/i/"); !ok {
			return false
		}
	}
	if len(h.cfg.CORSOrigins) > 0 && (!slices.Contains(h.cfg.CORSOrigins, "*") || r.Header("Origin") != "") {
		return false // applyCORS's fields
	}
	id, ext, ok := parseFile(file)
	if !ok {
		return false
	}
	var (
		rec     record
		kb, eb  [96]byte // the metadata key, the entity tag
		metaKey []byte
		meta    blobMeta
		f       blobFields
		err     error
	)
	if thumb {
		q, ok := strings.CutPrefix(r.Query, "w=")
		if !ok && r.Query != "" {
			return false
		}
		spec := renderSpec{}
		if spec.w, ok = thumbWidth(q); !ok || strings.ContainsFunc(q, func(c rune) bool { return c < '0' || c > '9' }) {
			return false
		}
		if err = h.lookupServed(id, "", &rec); err != nil || rec.MaxViews > 0 || int64(rec.Width)*int64(rec.Height) > h.cfg.MaxPixels {
			return false
		}
		var negotiated bool
		if spec.f, negotiated, ok = thumbFormat(r.Header("Accept"), &rec, ext, formatNone); !ok {
			return false
		}
		metaKey = spec.appendKey(kb[:0], rec.Sum)
		err = h.metas.get(h.st.db, metaKey, &meta)
		f = h.thumbFields(eb[:0], &rec, spec, negotiated)
	} else {
		if err = h.lookupServed(id, ext, &rec); err != nil || rec.MaxViews > 0 {
			return false
		}
		metaKey = appendKey(kb[:0], kindBlob, rec.Sum[:])
		err = h.metas.get(h.st.db, metaKey, &meta)
		f = h.originalFields(eb[:0], &rec)
	}
	if err != nil || meta.Store != "" {
		return false
	}
	f.mime = meta.Mime
	if nm := notModified(r, &f); nm || r.Method == http.MethodHead {
		// A head alone, as serveBlob's http.ServeContent writes it,
		// without opening the blob (which a hot body skips too).
		size := meta.Size
		if nm {
			size = -1
		}
		hp := plainHeads.Get().(*[]byte)
		*hp = f.appendHead((*hp)[:0], size)
		w.Respond(*hp, nil, h.cfg.WriteIdleTimeout)
		plainHeads.Put(hp)
	} else if !h.sendPlain(w, metaKey, &meta, rec.Sum, &f) {
		return false
	}
	h.metrics.served.Inc()
	return true
}

// notModified reports whether http.ServeContent answers r with a 304 for
// a blob with the fields f: If-None-Match is "*" or names f's entity tag
// (compared weakly), or, without If-None-Match, If-Modified-Since is a
// time at or after f.modified's second.
func notModified(r *httpfront.Request, f *blobFields) bool {
	if inm := r.Header("If-None-Match"); inm != "" {
		return etagListed(inm, f.etag)
	}
	ims := r.Header("If-Modified-Since")
	if ims == "" || f.modified.IsZero() || f.modified.Equal(time.Unix(0, 0)) {
		return false
	}
	t, err := http.ParseTime(ims)
	return err == nil && !f.modified.Truncate(time.Second).After(t)
}

// etagListed reports whether an If-None-Match list is "*" or names the
// entity tag etag (given without its quotes), weak or strong, reading the
// list as net/http does: up to its first malformed member.
func etagListed(list string, etag []byte) bool {
	for {
		list = strings.TrimLeft(list, " \t,")
		if list == "" {
			return false
		}
		if list[0] == '*' {
			return true
		}
		list = strings.TrimPrefix(list, "W/")
		if len(list) < 2 || list[0] != '"' {
			return false
		}
		end := strings.IndexByte(list[1:], '"')
		if end < 0 {
			return false
		}
		// The front lets no control or non-ASCII byte through: blanks
		// are the only bytes an entity tag may not hold.
		tag := list[1 : 1+end]
		if strings.ContainsAny(tag, " \t") {
			return false
		}
		if tag == string(etag) {
			return true
		}
		list = list[2+end:]
	}
}

// plainCopyMax is the largest body ServePlain reads into memory to send
// with its head in one writev(2), rather than writing the head and then
// sendfile(2) (with the lseek(2) before it): two system calls instead of
// three. plainCopyBudget bounds the bytes of all such bodies held at once
// (a client that reads slowly holds its body until its write ends): past
// it, bodies go out with sendfile.
const (
	plainCopyMax    = 128 << 10
	plainCopyBudget = 16 << 20
)

var plainBufs = sync.Pool{New: func() any { b := make([]byte, plainCopyMax); return &b }}

// sendPlain sends the blob metaKey names and meta describes, with the
// fields f, reporting false, with nothing written, when the blob cannot
// be read. A small body comes from h.bodies, or is read and may be kept
// there.
func (h *Host) sendPlain(w *httpfront.Writer, metaKey []byte, meta *blobMeta, s sum, f *blobFields) bool {
	hp := plainHeads.Get().(*[]byte)
	defer plainHeads.Put(hp)
	head := f.appendHead((*hp)[:0], meta.Size)
	*hp = head
	copied := meta.Size <= plainCopyMax
	if copied && h.plainHeld.Add(meta.Size) > plainCopyBudget {
		h.plainHeld.Add(-meta.Size)
		copied = false
	}
	if copied {
		defer h.plainHeld.Add(-meta.Size)
		var kb [64]byte
		k := append(append(kb[:0], metaKey...), meta.Gen[:]...)
		body := h.bodies.get(k)
		if body != nil {
			h.metrics.hotBodyHits.Inc()
		} else {
			keep := h.bodies.admit(k, meta.Size)
			if keep {
				body = make([]byte, meta.Size)
			} else {
				bp := plainBufs.Get().(*[]byte)
				defer plainBufs.Put(bp)
				body = (*bp)[:meta.Size]
			}
			if !h.readBlob(s, *meta, body) {
				return false
			}
			if keep {
				h.bodies.put(k, body)
			}
		}
		// A failed write ends the connection (httpfront): nothing to add.
		w.Respond(head, body, h.cfg.WriteIdleTimeout)
		return true
	}
	m := *meta // the reader keeps a pointer: a copy keeps the caller's off the heap
	content, err := h.st.open(context.Background(), s, &m)
	if err != nil {
		return false
	}
	defer content.Close()
	cr, ok := content.(*chunkReader)
	if !ok {
		return false
	}
	err = w.RespondFrom(head, h.cfg.WriteIdleTimeout, func(dst io.Writer) error {
		_, err := cr.sendTo(dst, m.Size)
		return err
	})
	return err == nil || w.Started()
}

// readBlob reads the whole blob of s that meta describes into body.
func (h *Host) readBlob(s sum, meta blobMeta, body []byte) bool {
	content, err := h.st.open(context.Background(), s, &meta)
	if err != nil {
		return false
	}
	defer content.Close()
	_, err = io.ReadFull(content, body)
	return err == nil
}

var plainHeads = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// appendHead appends the status line and header fields of a 200 with f
// and a body of size bytes, or, with size < 0, of a 304, as net/http
// writes those serveBlob and http.ServeContent set: sorted by name,
// without the Date that httpfront adds. A 304 has neither Content-Type
// nor Content-Length, nor Last-Modified since it has an ETag, nor
// Accept-Ranges, which ServeContent sets after its preconditions.
func (f *blobFields) appendHead(b []byte, size int64) []byte {
	whole := size >= 0
	if whole {
		b = append(b, "HTTP/1.1 200 OK\r\nAccept-Ranges: bytes\r\n"...)
	} else {
		b = append(b, "HTTP/1.1 304 Not Modified\r\n"...)
	}
	b = append(append(append(b, "Cache-Control: "...), f.cache...), "\r\n"...)
	if whole {
		b = strconv.AppendInt(append(b, "Content-Length: "...), size, 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Security-Policy: default-src 'none'\r\n"...)
	if whole {
		b = append(append(append(b, "Content-Type: "...), f.mime...), "\r\n"...)
	}
	b = append(append(b, "Etag: \""...), f.etag...)
	b = append(b, "\"\r\n"...)
	if whole && !f.modified.IsZero() && !f.modified.Equal(time.Unix(0, 0)) { // as ServeContent
		b = append(b, "Last-Modified: "...)
		b = append(f.modified.UTC().AppendFormat(b, http.TimeFormat), "\r\n"...)
	}
	if f.varyAccept {
		b = append(b, "Vary: Accept\r\n"...)
	}
	return append(b, "X-Content-Type-Options: nosniff\r\n"...)
}
