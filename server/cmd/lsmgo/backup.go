package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/backup"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

func init() {
	commands["backup"] = command{
		summary: "back up a DB directory into a directory or S3 (incremental, verified)",
		run:     runBackup,
	}
}

// s3Usage is the part of the backup and restore usage that says how an
// S3 backup set is named and reached.
const s3Usage = `A backup set is a directory or s3://bucket/prefix?endpoint=URL&region=R (endpoint
default https://s3.amazonaws.com, region us-east-1). S3 keys come from the flags, else
AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, else ~/.aws/credentials (profile AWS_PROFILE).`

// s3Flags adds the S3 key flags to fl.
func s3Flags(fl *flag.FlagSet) *backup.S3Credentials {
	var c backup.S3Credentials
	fl.StringVar(&c.AccessKey, "s3-access-key", "", "S3 access key `ID`")
	fl.StringVar(&c.SecretKey, "s3-secret-key", "", "S3 secret `key` (visible to other users in ps: prefer the environment)")
	return &c
}

// runBackup implements `lsmgo backup SRC DEST`: it opens the DB in SRC,
// checkpoints it beside SRC and stores the checkpoint in the backup set
// DEST (server/internal/backup). Exit status 0 means the backup is
// complete and verified, 1 that it failed, 2 a usage error.
func runBackup(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("backup", flag.ContinueOnError)
	creds := s3Flags(fl)
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: lsmgo backup [flags] SRC DEST")
		fmt.Fprintln(fl.Output(), `Backs up the DB in directory SRC into the backup set DEST. Only files DEST does not hold yet
are uploaded, each read back to compare its SHA-256; the backup exists once its manifest is
written, last. SRC must not be open elsewhere: back up a running server with BGSAVE
(backup-dir set) or POST /admin/backup instead.`)
		fmt.Fprintln(fl.Output(), s3Usage)
		fl.PrintDefaults()
	}
	var pos []string
	if code, done := parseFlags(fl, stdout, stderr, func() (err error) {
		if pos, err = parsePositionals(fl, args); err == nil && len(pos) != 2 {
			err = errUsage
		}
		return err
	}); done {
		return code
	}
	src, dest := pos[0], pos[1]
	st, err := backup.OpenStore(dest, *creds)
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo backup: %v\n", err)
		return 1
	}
	m, stats, err := backupDir(src, st)
	if err != nil {
		fmt.Fprintf(stderr, "lsmgo backup: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "backup %s of %s: %s\n", m.ID, src, stats)
	return 0
}

// backupDir opens the DB in src, which must exist (Open would create
// one), and backs it up into st.
func backupDir(src string, st backup.Store) (*backup.Manifest, backup.Stats, error) {
	if _, err := os.Stat(filepath.Join(src, "CURRENT")); err != nil {
		return nil, backup.Stats{}, fmt.Errorf("%s holds no lsmgo DB: %w", src, err)
	}
	db, err := lsmgo.Open(src, &lsmgo.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if errors.Is(err, vfs.ErrLocked) {
		return nil, backup.Stats{}, fmt.Errorf("%w\n%s is open in another process, such as a running lsmgo serve: back it up through the server (BGSAVE with backup-dir set, or POST /admin/backup)", err, src)
	}
	if err != nil {
		return nil, backup.Stats{}, err
	}
	scratch := filepath.Clean(src) + ".backup-checkpoint"
	m, stats, err := backup.DB(context.Background(), db, scratch, st)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return m, stats, err
}
