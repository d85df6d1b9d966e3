//go:build !linux

package httpfront

import "io"

// sendFile leaves every file to SendFile's copy: sendfile(2) with an
// offset and MSG_MORE are Linux's.
func (b *bodyWriter) sendFile(io.ReaderAt, int64, int64) (int64, bool, error) {
	return 0, false, nil
}
