package server

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/lsmgo-dev/lsmgo"

	"github.com/lsmgo-dev/lsmgo/server/imgbed"
)

// SpoolDir is where the image host of a server with data directory dir
// spools uploads: inside the data directory, so a crash's leftovers stay
// with the data (and count against its disk) and the next start removes
// them.
func SpoolDir(dir string) string { return filepath.Join(dir, "tmp") }

// newImageHost starts the image host on the server's DB, with its metrics
// in the server's registry.
func (s *Server) newImageHost(r *Config) (*imgbed.Host, error) {
	anonymous := map[string]imgbed.Anonymous{"auto": imgbed.AnonymousAuto, "yes": imgbed.AnonymousOn, "no": imgbed.AnonymousOff}
	spool := ""
	if s.base.FS == nil { // an in-memory engine's dir is not on disk
		spool = SpoolDir(r.Dir)
	}
	return imgbed.New(s.db, imgbed.Config{
		SpoolDir:                spool,
		BaseURL:                 r.ImagesBaseURL,
		MaxBytes:                r.ImagesMaxBytes,
		ResumableMaxBytes:       r.ImagesResumableMaxBytes,
		ResumablePerClient:      r.ImagesResumablePerClient,
		ResumableBytesPerClient: r.ImagesResumableBytesPerClient,
		FetchPrivate:            r.ImagesFetchPrivate,
		Anonymous:               anonymous[r.ImagesAnonymous],
		Tokens:                  imageTokens(r),
		UploadRate:              float64(r.ImagesUploadRate),
		UploadBurst:             r.ImagesUploadBurst,
		TokenUploadRate:         float64(r.ImagesTokenUploadRate),
		TokenUploadBurst:        r.ImagesTokenUploadBurst,
		MaxUploadsPerClient:     r.ImagesUploadsPerClient,
		CORSOrigins:             splitList(r.ImagesCORSOrigins),
		UploadQueueWait:         r.ImagesUploadQueueWait,
		MinUploadRate:           r.ImagesMinUploadRate,
		MinUploadRateWindow:     r.ImagesMinUploadRateWindow,
		RenderMemory:            r.ImagesRenderMemory,
		RenderMaxSide:           r.ImagesRenderMaxSide,
		RenderSecret:            r.ImagesRenderSecret,
		HotBodyBytes:            hotBodyBytes(r.ImagesHotBodyMemory),
		BlobStore:               r.BlobStore,
		S3AccessKey:             r.S3AccessKey,
		S3SecretKey:             r.S3SecretKey,
		Reclaimer:               s.imageReclaim,
		Registerer:              replacingRegisterer{s.metrics.registry},
		WriteRefusal:            s.imageWriteRefusal,
		Follower:                s.repl.following.Load,
	})
}

// imageWriteRefusal is why the image host refuses uploads and deletes
// now, as the Redis side refuses writes: on a read-only replica, and on a
// primary short of min-replicas-to-write.
func (s *Server) imageWriteRefusal() string {
	switch s.writeRefusal() {
	case "":
		return ""
	case msgReadOnlyReplica:
		return "this server is a read-only replica: write to its primary"
	default:
		return "not enough good replicas to write"
	}
}

// dbFilter is the DB's compaction filter: the image host's for image
// keys, the collections' for the rest (each keeps what it does not own).
// The image filter reclaims the bytes of expired images, by the engine's
// default clock, time.Now, and hands those kept in S3 to the image host
// through s.imageReclaim.
func (s *Server) dbFilter() func(lsmgo.Reader) lsmgo.CompactionFilter {
	imageFilter := imgbed.NewCompactionFilter(time.Now, s.imageReclaim)
	return func(state lsmgo.Reader) lsmgo.CompactionFilter {
		images, elems := imageFilter(state), newElemFilter(state)
		return lsmgo.CompactionFilterFunc(func(k []byte) bool { return images.Drop(k) || elems.Drop(k) })
	}
}

// imageTokens are the image host's tokens under c: image-tokens, and the
// admin token as an admin.
func imageTokens(c *Config) []imgbed.Token {
	tokens, _ := parseImageTokens(c.ImageTokens)
	if c.AdminToken != "" {
		tokens = append(tokens, imgbed.Token{Name: "admin", Secret: c.AdminToken, Admin: true})
	}
	return tokens
}

// parseImageTokens reads "name:secret[:admin]" entries separated by
// commas.
func parseImageTokens(v string) ([]imgbed.Token, error) {
	var tokens []imgbed.Token
	n := 0
	for entry := range strings.SplitSeq(v, ",") {
		n++
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		f := strings.Split(entry, ":")
		if len(f) < 2 || len(f) > 3 || f[0] == "" || f[1] == "" || len(f) == 3 && f[2] != "admin" {
			// By position, not content: a malformed entry may be a bare
			// secret, and this error reaches the logs on a reload.
			return nil, fmt.Errorf("image token %d is not name:secret[:admin]", n)
		}
		tokens = append(tokens, imgbed.Token{Name: f[0], Secret: f[1], Admin: len(f) == 3})
	}
	return tokens, nil
}

func checkImageTokens(v string) error {
	_, err := parseImageTokens(v)
	return err
}

// splitList reads a comma-separated setting, dropping empty entries.
func splitList(v string) []string {
	var out []string
	for e := range strings.SplitSeq(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// hotBodyBytes is imgbed's HotBodyBytes for images-hot-body-memory, whose
// 0 keeps nothing (imgbed's 0 is its default).
func hotBodyBytes(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}
