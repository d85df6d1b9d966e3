package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/lsmgo-dev/lsmgo/server/internal/backup"
)

func init() {
	commands["restore"] = command{
		summary: "restore a backup into an empty directory, checking every byte, or list the backups",
		run:     runRestore,
	}
}

// runRestore implements `lsmgo restore SRC DIR` and `lsmgo restore --list
// SRC`. Exit status 0 means DIR holds the backup, 1 that the restore
// failed (a damaged backup names the file), 2 a usage error.
func runRestore(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("restore", flag.ContinueOnError)
	creds := s3Flags(fl)
	id := fl.String("backup", "", "restore backup `ID` (default: the newest)")
	list := fl.Bool("list", false, "list the backups in SRC, oldest first, instead of restoring")
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: lsmgo restore [flags] SRC DIR\n       lsmgo restore --list SRC")
		fmt.Fprintln(fl.Output(), `Restores a backup from the backup set SRC into DIR, which must not exist or be empty. Every
file is checked against the backup's sizes and SHA-256 sums before DIR gets its name;
a damaged backup fails, naming the file, and leaves DIR as it was.`)
		fmt.Fprintln(fl.Output(), s3Usage)
		fl.PrintDefaults()
	}
	var pos []string
	if code, done := parseFlags(fl, stdout, stderr, func() (err error) {
		pos, err = parsePositionals(fl, args)
		if err == nil && (*list && len(pos) != 1 || !*list && len(pos) != 2) {
			err = errUsage
		}
		return err
	}); done {
		return code
	}
	ctx := context.Background()
	st, err := backup.OpenStore(pos[0], *creds)
	if err == nil && *list {
		err = listBackups(ctx, st, stdout)
	} else if err == nil {
		var m *backup.Manifest
		if m, err = backup.Restore(ctx, st, *id, pos[1]); err == nil {
			fmt.Fprintf(stdout, "restored backup %s (%d files) into %s\n", m.ID, len(m.Files), pos[1])
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo restore: %v\n", err)
		return 1
	}
	return 0
}

// listBackups prints one line per backup: its ID, creation time, files
// and bytes.
func listBackups(ctx context.Context, st backup.Store, w io.Writer) error {
	ids, err := backup.List(ctx, st)
	if err != nil {
		return err
	}
	for _, id := range ids {
		m, err := backup.Describe(ctx, st, id)
		if err != nil {
			fmt.Fprintf(w, "%s\tunreadable: %v\n", id, err)
			continue
		}
		var size int64
		for _, f := range m.Files {
			size += f.Size
		}
		fmt.Fprintf(w, "%s\t%s\t%d files\t%d bytes\n", m.ID, m.Created.Format("2006-01-02 15:04:05Z07:00"), len(m.Files), size)
	}
	return nil
}
