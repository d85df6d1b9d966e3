package rdb

// lzfDecompress expands LZF data (liblzf's format, which Redis uses for
// strings) into exactly n bytes.
func lzfDecompress(in []byte, n int) ([]byte, error) {
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a literal run of ctrl+1 bytes
			end := i + ctrl + 1
			if end > len(in) || len(out)+ctrl+1 > n {
				return nil, ErrFormat
			}
			out = append(out, in[i:end]...)
			i = end
			continue
		}
		length := ctrl >> 5
		if length == 7 {
			if i >= len(in) {
				return nil, ErrFormat
			}
			length += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, ErrFormat
		}
		back := len(out) - (ctrl&0x1f)<<8 - int(in[i]) - 1
		i++
		if back < 0 || len(out)+length+2 > n {
			return nil, ErrFormat
		}
		for j := range length + 2 { // byte by byte: the copy may overlap
			out = append(out, out[back+j])
		}
	}
	if len(out) != n {
		return nil, ErrFormat
	}
	return out, nil
}
