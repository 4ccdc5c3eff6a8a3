// Command release builds an evoclaw release: static, CGO-free binaries for
// linux amd64, arm64, armv7 and armv6 stamped with the version, commit and
// commit date; a .deb package per architecture (nfpm, from packaging/);
// and SHA256SUMS over all of them.
//
//	go run ./cmd/release --out dist/
//
// The version is the git tag on HEAD, else git describe after the last
// tag, else a pseudo-version from the commit (version.go). Builds are
// reproducible: the same commit gives the same bytes (-trimpath, no build
// id, no toolchain VCS stamp, file times from the commit).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := exitCode(run(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks a command line that is wrong; the flag package has
// printed the usage.
var errUsage = errors.New("usage")

// exitCode reports err on stderr and gives the exit status: 0 for none
// and for -h/--help (the usage is printed), 2 for a wrong command line, 1
// for a release that failed.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "release:", err)
		return 2
	}
	fmt.Fprintln(stderr, "release:", err)
	return 1
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "dist", "output directory (created; existing artefacts of the same version are replaced)")
	only := fs.String("targets", "", "comma-separated subset of "+strings.Join(targetNames(), ",")+" (default: all)")
	noDeb := fs.Bool("no-deb", false, "build binaries and checksums only")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	tgts, err := selectTargets(*only)
	if err != nil {
		return err
	}
	root, err := git(ctx, ".", "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("find the repository: %w", err)
	}
	src, err := readSource(ctx, root)
	if err != nil {
		return err
	}
	ver, err := releaseVersion(src)
	if err != nil {
		return err
	}
	deb, err := debVersion(ver)
	if err != nil {
		return err
	}
	if src.Modified {
		fmt.Fprintln(stderr, "release: warning: the tree has uncommitted changes; the binaries say so (+modified)")
	}
	outDir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	fmt.Fprintf(stderr, "release: %s (deb %s) from %s of %s\n", ver, deb, src.Commit, src.Time.UTC().Format("2006-01-02T15:04:05Z"))

	b := builder{root: root, out: outDir, version: ver, debVersion: deb, src: src, log: stderr}
	var artefacts []string
	for _, t := range tgts {
		name, err := b.binary(ctx, t)
		if err != nil {
			return err
		}
		artefacts = append(artefacts, name)
	}
	if !*noDeb {
		nfpm, cleanup, err := installNFPM(ctx, stderr)
		if err != nil {
			return err
		}
		defer cleanup()
		for _, t := range tgts {
			name, err := b.deb(ctx, nfpm, t)
			if err != nil {
				return err
			}
			artefacts = append(artefacts, name)
		}
	}
	if err := writeChecksums(outDir, artefacts); err != nil {
		return err
	}
	for _, a := range append(artefacts, ChecksumsFile) {
		fmt.Fprintln(stdout, filepath.Join(*out, a))
	}
	return nil
}
