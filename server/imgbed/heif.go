package imgbed

import (
	"bufio"
	"encoding/binary"
	"errors"
	"image"
	"io"
)

// HEIF (HEIC, what phones store photos as) and AVIF are both ISO base
// media files (ISO/IEC 14496-12): a sequence of boxes, each a 32-bit size
// and a 4-letter type, starting with "ftyp", whose brands name the codec.
// The images' dimensions are "ispe" properties inside the "meta" box
// (meta > iprp > ipco > ispe); the coded data is in "mdat". Nothing here
// decodes pixels.

// sniffHEIF names the format of a file whose first bytes b hold its
// "ftyp" box: AVIF for an avif/avis brand, HEIC for an HEVC one.
func sniffHEIF(b []byte) format {
	if len(b) < 16 || string(b[4:8]) != "ftyp" {
		return formatNone
	}
	end := min(len(b), int(binary.BigEndian.Uint32(b[:4])))
	brands := [][]byte{b[8:12]}
	for i := 16; i+4 <= end; i += 4 {
		brands = append(brands, b[i:i+4])
	}
	f := formatNone
	for _, br := range brands {
		switch string(br) {
		case "avif", "avis":
			return formatAVIF // an AVIF may list HEIF's structural brands too
		case "heic", "heix", "heim", "heis", "hevc", "hevx":
			f = formatHEIC
		}
	}
	return f
}

// maxMetaBox bounds the "meta" box read into memory for the dimensions.
// Phones write a few KiB (item info, locations, properties and the EXIF
// item's location); 1 MiB leaves room for large tiled images.
const maxMetaBox = 1 << 20

// boxHeader reads one box header: the payload size (-1: to the end of
// the file) and the type.
func boxHeader(r io.Reader) (payload int64, typ string, err error) {
	var h [16]byte
	if _, err := io.ReadFull(r, h[:8]); err != nil {
		return 0, "", err
	}
	size, typ := int64(binary.BigEndian.Uint32(h[:4])), string(h[4:8])
	switch size {
	case 0:
		return -1, typ, nil
	case 1:
		if _, err := io.ReadFull(r, h[8:16]); err != nil {
			return 0, "", err
		}
		large := binary.BigEndian.Uint64(h[8:16])
		if large < 16 || large > 1<<62 {
			return 0, "", invalid("%s box of %d bytes", typ, large)
		}
		return int64(large) - 16, typ, nil
	}
	if size < 8 {
		return 0, "", invalid("%s box of %d bytes", typ, size)
	}
	return size - 8, typ, nil
}

// heifConfig reads the dimensions of a HEIF or AVIF file: the largest
// "ispe" in its meta box, which is the primary image's (a grid of tiles,
// or the image itself; thumbnails and tiles are smaller). Taking the
// largest also makes the pixel limit apply to the worst case.
func heifConfig(r io.Reader) (image.Config, error) {
	br := bufio.NewReader(r)
	for {
		n, typ, err := boxHeader(br)
		if err != nil {
			return image.Config{}, err
		}
		if typ != "meta" {
			if n < 0 {
				return image.Config{}, invalid("no meta box")
			}
			if _, err := io.CopyN(io.Discard, br, n); err != nil {
				return image.Config{}, err
			}
			continue
		}
		if n < 4 || n > maxMetaBox {
			return image.Config{}, invalid("meta box of %d bytes", n)
		}
		meta := make([]byte, n)
		if _, err := io.ReadFull(br, meta); err != nil {
			return image.Config{}, err
		}
		var c image.Config
		if err := findISPE(meta[4:], 0, &c); err != nil { // meta is a full box: 4 bytes of version and flags
			return c, err
		}
		if c.Width == 0 {
			return c, invalid("no image size (ispe) in the meta box")
		}
		return c, nil
	}
}

// findISPE walks the boxes in b, descending into the containers on the
// path to the item properties, and keeps the largest ispe in c.
func findISPE(b []byte, depth int, c *image.Config) error {
	if depth > 4 {
		return nil
	}
	for len(b) > 0 {
		if len(b) < 8 {
			return invalid("box header cut off")
		}
		size, typ := int(binary.BigEndian.Uint32(b[:4])), string(b[4:8])
		if size == 0 {
			size = len(b)
		}
		if size < 8 || size > len(b) {
			return invalid("%s box overruns its container", typ)
		}
		body := b[8:size]
		switch typ {
		case "iprp", "ipco":
			if err := findISPE(body, depth+1, c); err != nil {
				return err
			}
		case "ispe":
			if len(body) < 12 {
				return invalid("short ispe box")
			}
			w, h := binary.BigEndian.Uint32(body[4:8]), binary.BigEndian.Uint32(body[8:12])
			if w > 1<<20 || h > 1<<20 {
				return invalid("image of %d×%d pixels", w, h)
			}
			if int64(w)*int64(h) > int64(c.Width)*int64(c.Height) {
				c.Width, c.Height = int(w), int(h)
			}
		}
		b = b[size:]
	}
	return nil
}

// walkHEIF follows the top-level boxes to the end of the file: each must
// fit, the first must be ftyp, and a meta box must be there.
func walkHEIF(r *bufio.Reader) error {
	var sawMeta bool
	for i := 0; ; i++ {
		n, typ, err := boxHeader(r)
		if i > 0 && errors.Is(err, io.EOF) {
			if !sawMeta {
				return invalid("no meta box")
			}
			return nil // the file ends where a box does
		}
		if err != nil {
			return err
		}
		if i == 0 && typ != "ftyp" {
			return invalid("first box is %q, not ftyp", typ)
		}
		sawMeta = sawMeta || typ == "meta"
		if n < 0 { // the last box: to the end of the file
			_, err := io.Copy(io.Discard, r)
			if err == nil && !sawMeta {
				return invalid("no meta box")
			}
			return err
		}
		if _, err := io.CopyN(io.Discard, r, n); err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
}
