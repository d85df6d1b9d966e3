package imgbed

import (
	"io"
	"sync"
	"time"
)

// Serving blobs without copying them through Go: http.ServeContent sends a
// body with io.CopyN into the ResponseWriter, which io.Copy turns into a
// ReadFrom call on the writer when it has one. serveBlob's writers
// (heldWriter over deadlineWriter over net/http's) implement ReadFrom so
// that a blob kept in the DB goes to chunkReader.sendTo, whose
// lsmgo.ValueReader.SendTo copies each piece from the engine's blob file
// into net/http's own ReadFrom, which uses sendfile(2) on a plain TCP
// connection, as nginx does. Any other body (a blob in S3, a multipart
// Range answer) is copied through Write, as before.

// sender is a body whose bytes can go to the connection by sendTo.
type sender interface {
	sendTo(w io.Writer, n int64) (int64, error)
}

// servedBody is the body serveBlob hands http.ServeContent: the blob's
// reader, remembering its first error, so that a failure before the first
// byte is answered as an error rather than a 200 that ends short.
type servedBody struct {
	rs  io.ReadSeeker
	err error
}

func (b *servedBody) Read(p []byte) (int, error) {
	n, err := b.rs.Read(p)
	b.note(err)
	return n, err
}

func (b *servedBody) Seek(offset int64, whence int) (int64, error) {
	return b.rs.Seek(offset, whence)
}

func (b *servedBody) note(err error) {
	if err != nil && b.err == nil {
		b.err = err
	}
}

// ReadFrom sends a servedBody that is a sender with sendTo, and lets the
// pieces sendTo copies in (each checked by the engine before its first
// byte, see lsmgo.ValueReader) through to the connection; anything else
// goes through Write, which holds the status line back until a first
// byte was read.
func (w *heldWriter) ReadFrom(src io.Reader) (int64, error) {
	if lr, ok := src.(*io.LimitedReader); ok && !w.sending {
		if b, ok := lr.R.(*servedBody); ok {
			if lr.N <= smallBody {
				return w.copySmall(lr)
			}
			if s, ok := b.rs.(sender); ok {
				w.sending = true
				n, err := s.sendTo(w, lr.N)
				w.sending = false
				lr.N -= n
				b.note(err)
				return n, err
			}
		}
	}
	if w.sending {
		w.send()
		return io.Copy(w.ResponseWriter, src)
	}
	return io.Copy(writeOnly{w}, src)
}

// smallBody is the largest body copied through Go rather than sent with
// sendfile: one read into a pooled buffer and one Write, which net/http
// sends with the header in as few writes as its buffers allow, costs
// fewer system calls than the lseek, the header write and the sendfile
// (plus the 512 bytes net/http's ReadFrom writes first to sniff them)
// that sendfile takes. Thumbnails and small originals are below it.
const smallBody = 32 << 10

var smallPool = sync.Pool{New: func() any { b := make([]byte, smallBody); return &b }}

// copySmall sends lr, of at most smallBody bytes, with one Write.
func (w *heldWriter) copySmall(lr *io.LimitedReader) (int64, error) {
	bp := smallPool.Get().(*[]byte)
	defer smallPool.Put(bp)
	n, err := io.ReadFull(lr, (*bp)[:lr.N])
	if err != nil && n == 0 {
		return 0, err
	}
	m, werr := w.Write((*bp)[:n])
	if werr != nil {
		return int64(m), werr
	}
	return int64(m), err
}

// ReadFrom gives a piece of at most sendPiece bytes (chunkReader.sendTo)
// one write deadline and hands it to net/http's ReadFrom (sendfile);
// anything longer is copied through Write, a deadline per write.
func (d *deadlineWriter) ReadFrom(src io.Reader) (int64, error) {
	if lr, ok := src.(*io.LimitedReader); ok && lr.N <= sendPiece {
		d.rc.SetWriteDeadline(time.Now().Add(d.idle))
		return io.Copy(d.ResponseWriter, src)
	}
	return io.Copy(writeOnly{d}, src)
}

// writeOnly hides a writer's ReadFrom from io.Copy.
type writeOnly struct{ io.Writer }
