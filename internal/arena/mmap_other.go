//go:build !unix

package arena

import "errors"

// Where anonymous mappings are not available, NewMapped falls back to the
// heap.
func mapAnon(int) ([]byte, error) { return nil, errors.New("arena: no anonymous mappings") }

func unmap([]byte) error { return nil }

func discardPages([]byte) error { return nil }
