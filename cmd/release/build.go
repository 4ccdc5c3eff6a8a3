package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// NFPMModule is the packager cmd/release runs, pinned: `go install` builds
// it outside this module, so it adds nothing to go.mod.
const NFPMModule = "github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.44.0"

// target is one platform a release ships for.
type target struct {
	Name    string // in file names: amd64, arm64, armv7, armv6
	GOARCH  string
	GOARM   string // "" unless GOARCH is arm
	DebArch string // Debian architecture: armv6 and armv7 are both armhf
	// Tags are the build tags of the target's binary.
	Tags string
}

// targets are the platforms of a release, in build order.
//
// The 32-bit ARM binaries leave the cluster out (nocluster): a 32-bit
// build refuses [cluster] anyway (protoactor-go's registry, see
// docs/CLUSTER.md), and on the small boards they serve the cluster's
// gRPC and etcd code cost 6 MB of binary and about 1 MB of private memory
// in every process.
var targets = []target{
	{"amd64", "amd64", "", "amd64", ""},
	{"arm64", "arm64", "", "arm64", ""},
	{"armv7", "arm", "7", "armhf", "nocluster"},
	{"armv6", "arm", "6", "armhf", "nocluster"},
}

func targetNames() []string {
	var n []string
	for _, t := range targets {
		n = append(n, t.Name)
	}
	return n
}

// selectTargets parses --targets; empty means all.
func selectTargets(list string) ([]target, error) {
	if list == "" {
		return targets, nil
	}
	var sel []target
next:
	for _, name := range strings.Split(list, ",") {
		for _, t := range targets {
			if t.Name == strings.TrimSpace(name) {
				sel = append(sel, t)
				continue next
			}
		}
		return nil, fmt.Errorf("unknown target %q (have %s)", name, strings.Join(targetNames(), ", "))
	}
	return sel, nil
}

// binaryName is the file name of a target's binary.
func binaryName(version string, t target) string {
	return "evoclaw_" + version + "_linux_" + t.Name
}

// debName is the file name of a target's package.
func debName(debVersion string, t target) string {
	return "evoclaw_" + debVersion + "_linux_" + t.Name + ".deb"
}

// builder builds the artefacts of one release.
type builder struct {
	root, out           string // repository root, output directory
	version, debVersion string
	src                 source
	log                 io.Writer
}

// ldflags strip symbols and stamp what `evoclaw version` prints.
func (b builder) ldflags() string {
	return strings.Join([]string{"-s", "-w", "-buildid=",
		"-X", "main.version=" + b.version,
		"-X", "main.commit=" + b.src.Commit,
		"-X", "main.date=" + b.src.Time.UTC().Format(time.RFC3339),
		"-X", "main.modified=" + strconv.FormatBool(b.src.Modified)}, " ")
}

// buildArgs are the go build arguments of one binary. -buildvcs=false:
// the stamp above names the commit, and the toolchain's own VCS stamp
// differs between a clone and a git worktree of the same commit.
func (b builder) buildArgs(t target, out string) []string {
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", b.ldflags()}
	if t.Tags != "" {
		args = append(args, "-tags", t.Tags)
	}
	return append(args, "-o", out, "./cmd/evoclaw")
}

// binary builds one target's binary into the output directory.
func (b builder) binary(ctx context.Context, t target) (string, error) {
	name := binaryName(b.version, t)
	fmt.Fprintf(b.log, "release: build %s\n", name)
	cmd := exec.CommandContext(ctx, "go", b.buildArgs(t, filepath.Join(b.out, name))...)
	cmd.Dir = b.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+t.GOARCH, "GOARM="+t.GOARM)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", name, err, out)
	}
	return name, nil
}

// deb packages one target's binary with nfpm.
func (b builder) deb(ctx context.Context, nfpm string, t target) (string, error) {
	name := debName(b.debVersion, t)
	fmt.Fprintf(b.log, "release: package %s\n", name)
	cmd := exec.CommandContext(ctx, nfpm, "package", "--config", "nfpm.yaml", "--packager", "deb", "--target", filepath.Join(b.out, name))
	cmd.Dir = filepath.Join(b.root, "cmd", "release", "packaging")
	cmd.Env = append(os.Environ(),
		"EVOCLAW_BINARY="+filepath.Join(b.out, binaryName(b.version, t)),
		"EVOCLAW_DEB_ARCH="+t.DebArch,
		"EVOCLAW_DEB_VERSION="+b.debVersion,
		"SOURCE_DATE_EPOCH="+strconv.FormatInt(b.src.Time.Unix(), 10))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("package %s: %w\n%s", name, err, out)
	}
	return name, nil
}

// installNFPM builds the pinned nfpm into a temporary directory.
func installNFPM(ctx context.Context, log io.Writer) (string, func(), error) {
	dir, err := os.MkdirTemp("", "evoclaw-release-nfpm-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	fmt.Fprintf(log, "release: go install %s\n", NFPMModule)
	cmd := exec.CommandContext(ctx, "go", "install", NFPMModule)
	// The host's own platform, whatever the caller exported for builds.
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=", "CGO_ENABLED=0", "GOOS=", "GOARCH=", "GOARM=")
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("install nfpm: %w\n%s", err, out)
	}
	return filepath.Join(dir, "nfpm"), cleanup, nil
}

// git runs a git command in dir and returns its trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// readSource asks git about HEAD of the repository at root.
func readSource(ctx context.Context, root string) (source, error) {
	var src source
	var err error
	if src.Commit, err = git(ctx, root, "rev-parse", "HEAD"); err != nil {
		return src, err
	}
	ct, err := git(ctx, root, "log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return src, err
	}
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return src, fmt.Errorf("commit time %q: %w", ct, err)
	}
	src.Time = time.Unix(sec, 0).UTC()
	status, err := git(ctx, root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return src, err
	}
	src.Modified = status != ""
	// No reachable tag is not an error: the version is then a pseudo-version.
	src.Describe, _ = git(ctx, root, "describe", "--tags", "--long", "--abbrev=12", "--match", "v[0-9]*", "HEAD")
	declared, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(DeclaredFile)))
	if err != nil {
		return src, fmt.Errorf("read the declared version: %w", err)
	}
	src.Declared = strings.TrimSpace(string(declared))
	return src, nil
}
