package server

import (
	"reflect"
	"runtime/debug"
	"strings"
)

// Build identifies the lsmgo code running: the version of the module that
// holds this package and, when that module is the main one and was built
// from a checkout, its VCS commit. Both read "(devel)" when the binary does
// not record them (go run, go test, a build outside version control).
type Build struct {
	Version string
	// Commit is the VCS revision, with "+dirty" when the checkout had
	// uncommitted changes.
	Commit string
}

const devel = "(devel)"

// BuildInfo returns the running binary's Build, from the build information
// the Go toolchain embeds. INFO reports it as lsmgo_version, and the lsmgo
// command prints it for --version.
func BuildInfo() Build {
	bi, _ := debug.ReadBuildInfo()
	return buildOf(bi, reflect.TypeOf((*Server)(nil)).Elem().PkgPath())
}

// buildOf finds the module holding the package pkg in bi: the main module
// when lsmgo is the program, a dependency when another program embeds the
// server. It matches by path so it keeps working whichever module the
// package lives in.
func buildOf(bi *debug.BuildInfo, pkg string) Build {
	b := Build{Version: devel, Commit: devel}
	if bi == nil {
		return b
	}
	var mod *debug.Module
	for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
		// The longest matching path is the innermost module.
		if m.Path != "" && (pkg == m.Path || strings.HasPrefix(pkg, m.Path+"/")) &&
			(mod == nil || len(m.Path) > len(mod.Path)) {
			mod = m
		}
	}
	if mod == nil {
		return b
	}
	main := mod == &bi.Main
	if mod.Replace != nil {
		mod = mod.Replace
	}
	if mod.Version != "" {
		b.Version = mod.Version
	}
	if !main {
		// Only the main module's commit is recorded; a dependency's
		// pseudo-version names its commit.
		return b
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.Commit != devel {
		b.Commit += "+dirty"
	}
	return b
}
