package server

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/resp"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// A full sync (doc/replication.md, "Full sync") sends the primary's
// checkpoint, file by file, over the replication connection, after
// +FULLSYNC and before the batches that follow it. Each frame is a RESP
// array of bulk strings:
//
//	FILE  <name> <size>     a file of the checkpoint begins
//	CHUNK <bytes> <crc32c>  its next bytes (at most fullSyncChunk), with
//	                        their CRC-32C (Castagnoli), in decimal
//	DONE  <last-seq> <files> the checkpoint is whole: it ends at sequence
//	                        number last-seq, and held that many files
//
// A file's chunks add up to its size; a file of size 0 has none. CURRENT
// comes last. The batch stream then starts at last-seq+1.

// fullSyncChunk bounds a CHUNK: large enough that framing costs nothing
// against the copy, small enough to buffer.
const fullSyncChunk = 256 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sendFullSync streams a checkpoint of the DB to the replica on c and
// returns the sequence number it ends at.
func (s *Server) sendFullSync(c *conn) (uint64, error) {
	files := 0
	buf := make([]byte, fullSyncChunk)
	last, err := s.db.StreamCheckpoint(func(name string, size int64, r io.Reader) error {
		files++
		writeFrame(c.wr, "FILE", []byte(name), strconv.AppendInt(nil, size, 10))
		for left := size; left > 0; {
			n, err := io.ReadFull(r, buf[:min(int64(len(buf)), left)])
			if err != nil {
				return fmt.Errorf("reading %s: %w", name, err)
			}
			left -= int64(n)
			writeFrame(c.wr, "CHUNK", buf[:n], strconv.AppendUint(nil, uint64(crc32.Checksum(buf[:n], castagnoli)), 10))
			if err := c.wr.Flush(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	writeFrame(c.wr, "DONE", strconv.AppendUint(nil, last, 10), strconv.AppendInt(nil, int64(files), 10))
	return last, c.wr.Flush()
}

func writeFrame(w *resp.Writer, kind string, args ...[]byte) {
	w.ArrayHeader(1 + len(args))
	w.BulkString(kind)
	for _, a := range args {
		w.Bulk(a)
	}
}

// fullSyncReceiver writes a full sync's files into DIR.fullsync-tmp, as
// they arrive, and checks every frame against the protocol.
type fullSyncReceiver struct {
	fs   vfs.FS
	dir  string // the staging directory
	seen map[string]bool
	// The file being received: its name, handle and bytes still to come.
	name string
	f    vfs.File
	left int64
	// dataset is the copy's dataset id, read once it is whole.
	dataset string
}

// receiveFullSync reads a full sync from rd into DIR.fullsync-tmp and, once
// it is whole and opens as a DB at the sequence number DONE names, renames
// it to DIR.fullsync-ready, durably; stream is the primary's stream id,
// recorded in the copy as the one it follows. It returns the copy's last
// sequence number and dataset id. The data directory is not touched: swapIn installs the
// copy.
func (s *Server) receiveFullSync(rd *resp.Reader, nc net.Conn, stream string) (last uint64, dataset string, err error) {
	dir := filepath.Clean(s.config().Dir)
	rc := &fullSyncReceiver{fs: s.fs(), dir: dir + fullSyncTmp, seen: map[string]bool{}}
	defer rc.closeFile()
	for _, stale := range []string{dir + fullSyncReady, rc.dir} {
		if err := removeTree(rc.fs, stale); err != nil {
			return 0, "", err
		}
	}
	if err := rc.fs.MkdirAll(rc.dir, 0o755); err != nil {
		return 0, "", err
	}
	for {
		nc.SetReadDeadline(time.Now().Add(10 * replPingInterval))
		v, err := rd.ReadValue()
		if err != nil {
			return 0, "", err
		}
		s.repl.lastIO.Store(time.Now().Unix())
		if v.Type == '-' {
			return 0, "", fmt.Errorf("primary failed the full sync: %s", v.Err)
		}
		done, last, err := rc.frame(v)
		if err != nil {
			return 0, "", fmt.Errorf("full sync: %w", err)
		}
		if done {
			err := s.finishReceive(rc, stream, last)
			return last, rc.dataset, err
		}
	}
}

// frame takes one frame; done is set, with the last sequence number, by a
// valid DONE.
func (rc *fullSyncReceiver) frame(v resp.Value) (done bool, last uint64, err error) {
	if v.Type != '*' || len(v.Array) == 0 {
		return false, 0, fmt.Errorf("unexpected reply type %q", v.Type)
	}
	args := v.Array
	for _, a := range args {
		if a.Type != '$' {
			return false, 0, errors.New("a frame holds bulk strings only")
		}
	}
	switch kind := string(args[0].Str); {
	case kind == "FILE" && len(args) == 3:
		name := string(args[1].Str)
		size, err := strconv.ParseInt(string(args[2].Str), 10, 64)
		switch {
		case rc.f != nil:
			return false, 0, fmt.Errorf("FILE %s before %s ended", name, rc.name)
		case !safeFileName(name) || rc.seen[name]:
			return false, 0, fmt.Errorf("bad or repeated file name %q", name)
		case err != nil || size < 0:
			return false, 0, fmt.Errorf("bad size for %s", name)
		}
		rc.seen[name] = true
		if rc.f, err = rc.fs.Create(rc.fs.PathJoin(rc.dir, name)); err != nil {
			return false, 0, err
		}
		rc.name, rc.left = name, size
		return false, 0, rc.endFileIfDone()
	case kind == "CHUNK" && len(args) == 3:
		data := args[1].Str
		sum, err := strconv.ParseUint(string(args[2].Str), 10, 32)
		switch {
		case rc.f == nil:
			return false, 0, errors.New("CHUNK outside a file")
		case err != nil || uint32(sum) != crc32.Checksum(data, castagnoli):
			return false, 0, fmt.Errorf("checksum mismatch in %s", rc.name)
		case int64(len(data)) > rc.left:
			return false, 0, fmt.Errorf("%s longer than announced", rc.name)
		}
		if _, err := rc.f.Write(data); err != nil {
			return false, 0, err
		}
		rc.left -= int64(len(data))
		return false, 0, rc.endFileIfDone()
	case kind == "DONE" && len(args) == 3:
		last, err := strconv.ParseUint(string(args[1].Str), 10, 64)
		files, ferr := strconv.Atoi(string(args[2].Str))
		switch {
		case rc.f != nil:
			return false, 0, fmt.Errorf("DONE before %s ended", rc.name)
		case err != nil || ferr != nil || files != len(rc.seen) || !rc.seen["CURRENT"]:
			return false, 0, fmt.Errorf("DONE after %d files names %q files", len(rc.seen), args[2].Str)
		}
		return true, last, nil
	default:
		return false, 0, fmt.Errorf("unknown frame %q with %d arguments", kind, len(args))
	}
}

// endFileIfDone syncs and closes the file once all its bytes came.
func (rc *fullSyncReceiver) endFileIfDone() error {
	if rc.left > 0 {
		return nil
	}
	f := rc.f
	rc.f = nil
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (rc *fullSyncReceiver) closeFile() {
	if rc.f != nil {
		rc.f.Close()
	}
}

// safeFileName accepts the names an engine directory holds (digits,
// letters, '.', '-', '_'), which keeps a primary's file inside the
// staging directory.
func safeFileName(name string) bool {
	if name == "" || len(name) > 64 || name == "." || name == ".." {
		return false
	}
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// finishReceive records the followed stream in the copy, checks that it
// opens at last, and renames it ready, durably.
func (s *Server) finishReceive(rc *fullSyncReceiver, stream string, last uint64) error {
	f, err := rc.fs.Create(rc.fs.PathJoin(rc.dir, followedFile))
	if err == nil {
		_, err = f.Write([]byte(stream + "\n"))
		if serr := f.Sync(); err == nil {
			err = serr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	opts := s.engineOptions(s.config())
	opts.OnCommit = nil
	db, err := lsmgo.Open(rc.dir, opts)
	if err != nil {
		return fmt.Errorf("the copy does not open: %w", err)
	}
	got := db.LastSeq()
	id, err := db.Get([]byte(datasetKey))
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("the copy's dataset id: %w", err)
	}
	rc.dataset = string(id)
	if got != last {
		return fmt.Errorf("the copy ends at sequence number %d, the primary said %d", got, last)
	}
	if err := vfs.SyncDir(rc.fs, rc.dir); err != nil {
		return err
	}
	dir := filepath.Clean(s.config().Dir)
	return renameSynced(rc.fs, rc.dir, dir+fullSyncReady, filepath.Dir(dir))
}
