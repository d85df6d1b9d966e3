package lsmgo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// The OPTIONS file (doc/format.md, "OPTIONS") records the options the DB
// was last opened with, so that Check, and a person reading a directory
// someone sent with a bug report, can tell how it was configured. Open
// writes it and never reads it: a DB opens the same with any options, and
// one whose OPTIONS is missing (a directory from before the file existed)
// or damaged opens normally and gets a new one. An Open that cannot write
// it (a full disk) logs a warning and goes on: the data does not depend
// on it, and an Open on a full disk must still serve reads.

// optionsFileVersion is the format version of the OPTIONS file, written
// on its first line. A new option is a new line and keeps the version; a
// change in the meaning or syntax of an existing line takes a new one.
const optionsFileVersion = 1

// optionsNotWritten is the message of the warning an Open that could not
// write its OPTIONS file logs, with the error as attribute "err".
const optionsNotWritten = "lsmgo: OPTIONS not updated"

// optionsFileMagic starts the first line, before the version.
const optionsFileMagic = "lsmgo-options "

// OptionSetting is one line of an OPTIONS file: an option's name and its
// value as text.
type OptionSetting struct {
	Name, Value string
}

// settings returns the lines of the OPTIONS file for o, whose defaults
// have been filled in (withDefaults), in the order doc/format.md lists.
// FS, Logger and Now are not recorded: they say nothing about the data.
func (o *Options) settings() []OptionSetting {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	filter := "none"
	if o.NewCompactionFilter != nil {
		filter = "set"
	}
	return []OptionSetting{
		{"sync", o.Sync.String()},
		{"memtable-size", itoa(int64(o.MemTableSize))},
		{"memtable-stop-writes-threshold", itoa(int64(o.MemTableStopWritesThreshold))},
		{"l0-compaction-threshold", itoa(int64(o.L0CompactionThreshold))},
		{"l0-slowdown-writes-threshold", itoa(int64(o.L0SlowdownWritesThreshold))},
		{"l0-stop-writes-threshold", itoa(int64(o.L0StopWritesThreshold))},
		{"lbase-max-bytes", itoa(o.LBaseMaxBytes)},
		{"level-multiplier", itoa(int64(o.LevelMultiplier))},
		{"target-file-size", itoa(o.TargetFileSize)},
		{"block-size", itoa(int64(o.BlockSize))},
		{"bloom-bits-per-key", itoa(int64(o.BloomBitsPerKey))},
		{"compression", o.Compression.String()},
		{"cache-size", itoa(o.CacheSize)},
		{"map-tables", strconv.FormatBool(o.MapTables)},
		{"map-budget", itoa(o.MapBudget)},
		{"max-concurrent-compactions", itoa(int64(o.MaxConcurrentCompactions))},
		{"strict-wal-recovery", strconv.FormatBool(o.StrictWALRecovery)},
		{"disk-reserve", itoa(o.DiskReserve)},
		{"value-threshold", itoa(int64(o.ValueThreshold))},
		{"blob-gc-threshold", strconv.FormatFloat(o.BlobGCThreshold, 'g', -1, 64)},
		{"compaction-filter", filter},
	}
}

// encodeOptionsFile returns the bytes of an OPTIONS file holding s.
func encodeOptionsFile(s []OptionSetting) []byte {
	b := fmt.Appendf(nil, "%s%d\n", optionsFileMagic, optionsFileVersion)
	for _, o := range s {
		b = fmt.Appendf(b, "%s=%s\n", o.Name, o.Value)
	}
	return b
}

// decodeOptionsFile parses the bytes of an OPTIONS file. It refuses
// another format version, a line that is not name=value with a name of
// [a-z0-9-], a repeated name, and a last line without its newline (a
// file cut short). Names it does not know are kept: a later version may
// add options without changing the format.
func decodeOptionsFile(data []byte) ([]OptionSetting, error) {
	first, rest, ok := bytes.Cut(data, []byte("\n"))
	v, isHeader := bytes.CutPrefix(first, []byte(optionsFileMagic))
	if !ok || !isHeader {
		return nil, errors.New("not an OPTIONS file: no first line " + strconv.Quote(optionsFileMagic+"N"))
	}
	if string(v) != strconv.Itoa(optionsFileVersion) {
		return nil, fmt.Errorf("format version %q; this version reads %d", v, optionsFileVersion)
	}
	var s []OptionSetting
	seen := make(map[string]bool)
	for line := 2; len(rest) > 0; line++ {
		var l []byte
		if l, rest, ok = bytes.Cut(rest, []byte("\n")); !ok {
			return nil, fmt.Errorf("line %d has no newline: the file is cut short", line)
		}
		name, value, ok := bytes.Cut(l, []byte("="))
		if !ok || !validOptionName(name) {
			return nil, fmt.Errorf("line %d is not name=value: %q", line, l)
		}
		if seen[string(name)] {
			return nil, fmt.Errorf("line %d repeats %s", line, name)
		}
		seen[string(name)] = true
		s = append(s, OptionSetting{string(name), string(value)})
	}
	return s, nil
}

func validOptionName(name []byte) bool {
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return len(name) > 0
}

// writeOptionsFile replaces dir's OPTIONS with one holding s, atomically:
// a temporary file named by tmpNum is written and synced, renamed over
// OPTIONS, and the directory synced. A crash leaves the old file or the
// new one, whole, and perhaps the temporary file, which Open deletes.
func writeOptionsFile(fs vfs.FS, dir string, tmpNum base.FileNum, s []OptionSetting) error {
	tmp := fs.PathJoin(dir, base.MakeFilename(base.FileTypeTemp, tmpNum))
	f, err := fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("lsmgo: writing OPTIONS: %w", err)
	}
	_, err = f.Write(encodeOptionsFile(s))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, fs.PathJoin(dir, base.MakeFilename(base.FileTypeOptions, 0)))
	}
	if err != nil {
		fs.Remove(tmp)
		return fmt.Errorf("lsmgo: writing OPTIONS: %w", err)
	}
	return syncDir(fs, dir)
}

// readOptionsFile returns the settings in dir's OPTIONS, or nil and an
// error matching os.ErrNotExist when there is none.
func readOptionsFile(fs vfs.FS, dir string) ([]OptionSetting, error) {
	path := fs.PathJoin(dir, base.MakeFilename(base.FileTypeOptions, 0))
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// An OPTIONS file is well under a KiB; a huge one is not ours.
	const maxSize = 64 << 10
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxSize {
		return nil, base.Corruptf(path, -1, "over %d bytes: not an OPTIONS file", maxSize)
	}
	s, err := decodeOptionsFile(data)
	if err != nil {
		return nil, base.Corruptf(path, -1, "%v", err)
	}
	return s, nil
}

// checkOptionsFile fills the report's Options from the OPTIONS file. A
// missing file is fine (a DB last opened before the file existed); a
// damaged one is a warning, since Open does not read it and writes a new
// one.
func (c *checker) checkOptionsFile() {
	s, err := readOptionsFile(c.fs, c.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		c.warn(fmt.Errorf("%w; Open writes a new one", err))
	default:
		c.report.Options = s
	}
}
