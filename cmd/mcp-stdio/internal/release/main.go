// Command release builds mcp-stdio's release: for each target, a static
// binary in a checksummed archive and an npm package, plus the npm package
// that runs them and the MCP Registry entry.
//
//	go run ./cmd/mcp-stdio/internal/release [-out DIR] [-targets LIST] [VERSION]
//
// .release/build runs it from the module's root. VERSION (a leading "v" is
// dropped) must be a semantic version, as npm requires; without it, the
// tag at HEAD (vX.Y.Z) is taken. Into DIR (dist), which must not exist or
// be empty:
//
//	mcp-stdio_VERSION_OS_ARCH.tar.gz  linux and darwin: mcp-stdio, README.md
//	mcp-stdio_VERSION_OS_ARCH.zip     windows: mcp-stdio.exe, README.md
//	SHA256SUMS                        the archives' SHA-256, as sha256sum -c reads it
//	npm/OS-CPU/                       @mcp-stdio/OS-CPU: the binary, with "os" and "cpu"
//	npm/mcp-stdio/                    mcp-stdio: the launcher; the above as optionalDependencies
//	server.json                       the MCP Registry entry
//
// Binaries are built with CGO_ENABLED=0 and -trimpath, stripped, and carry
// VERSION (-X main.version). The npm and registry files are the templates
// in .release with VERSION stamped in; their other bytes are kept.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// Names shared by the archives, the npm packages and the registry entry.
const (
	command = "mcp-stdio"
	// mainPackage is the npm package users run (npx -y mcp-stdio URL).
	mainPackage = "mcp-stdio"
	// platformScope holds one npm package per target, named OS-CPU in
	// Node's terms (process.platform, process.arch), as the launcher
	// looks for them.
	platformScope = "@mcp-stdio/"
	// templateDir holds the npm and registry templates, under the
	// module's root.
	templateDir = ".release"
)

// target is a GOOS/GOARCH pair the release is built for.
type target struct{ goos, goarch string }

// releaseTargets returns the six targets of a release.
func releaseTargets() []target {
	return []target{
		{"linux", "amd64"}, {"linux", "arm64"},
		{"darwin", "amd64"}, {"darwin", "arm64"},
		{"windows", "amd64"}, {"windows", "arm64"},
	}
}

func (t target) String() string { return t.goos + "/" + t.goarch }

// npmOS and npmCPU name the target as Node does (process.platform,
// process.arch), for package.json's "os" and "cpu".
func (t target) npmOS() string {
	if t.goos == "windows" {
		return "win32"
	}
	return t.goos
}

func (t target) npmCPU() string {
	if t.goarch == "amd64" {
		return "x64"
	}
	return t.goarch
}

// npmPackage returns the name of the target's npm package.
func (t target) npmPackage() string { return platformScope + t.npmOS() + "-" + t.npmCPU() }

// executable returns the binary's file name.
func (t target) executable() string {
	if t.goos == "windows" {
		return command + ".exe"
	}
	return command
}

// archive returns the file name of the target's archive.
func (t target) archive(version string) string {
	ext := ".tar.gz"
	if t.goos == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("%s_%s_%s_%s%s", command, version, t.goos, t.goarch, ext)
}

// parseTargets reads a comma-separated list of GOOS/GOARCH pairs; each
// must be a release target.
func parseTargets(s string) ([]target, error) {
	var ts []target
	for f := range strings.SplitSeq(s, ",") {
		goos, goarch, _ := strings.Cut(strings.TrimSpace(f), "/")
		t := target{goos, goarch}
		if !slices.Contains(releaseTargets(), t) {
			return nil, fmt.Errorf("-targets: %q is not a release target (%v)", f, releaseTargets())
		}
		if !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	return ts, nil
}

// semver matches a semantic version (semver.org 2.0.0), which npm and the
// MCP Registry want.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// checkVersion drops a leading "v" and checks that what is left is a
// semantic version.
func checkVersion(v string) (string, error) {
	v = strings.TrimPrefix(v, "v")
	if !semver.MatchString(v) {
		return "", fmt.Errorf("version %q is not a semantic version (1.2.3, 1.2.3-rc.1)", v)
	}
	return v, nil
}

// config is one release build.
type config struct {
	root    string // the module's root: the sources, README.md and the templates
	out     string // where the release is written
	version string
	targets []target
	// modTime is the time the archives give their files.
	modTime time.Time
	// build writes the binary for t to dst; goBuild unless a test says
	// otherwise.
	build func(ctx context.Context, root string, t target, version, dst string) error
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	out := fs.String("out", "dist", "the `directory` to write the release into; it must not exist or be empty")
	list := fs.String("targets", "", "comma-separated GOOS/GOARCH `list` to build (default: all six)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: release [-out DIR] [-targets LIST] [VERSION]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("one VERSION at most, not %q", fs.Args())
	}
	cfg := config{root: ".", out: *out, targets: releaseTargets(), build: goBuild}
	if *list != "" {
		ts, err := parseTargets(*list)
		if err != nil {
			return err
		}
		cfg.targets = ts
	}
	v := fs.Arg(0)
	if v == "" {
		tag, err := gitOutput(ctx, cfg.root, "describe", "--tags", "--exact-match", "--match", "v[0-9]*", "HEAD")
		if err != nil {
			return fmt.Errorf("no VERSION given, and HEAD has no version tag (vX.Y.Z): %w", err)
		}
		v = tag
	}
	var err error
	if cfg.version, err = checkVersion(v); err != nil {
		return err
	}
	cfg.modTime = sourceTime(ctx, cfg.root)
	if err := release(ctx, cfg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release %s written to %s:\n", cfg.version, cfg.out)
	fmt.Fprintf(stdout, "  archives and SHA256SUMS: attach to the release\n")
	fmt.Fprintf(stdout, "  npm: in each of %s, then in %s: npm publish --access public\n",
		filepath.Join(cfg.out, "npm", "OS-CPU"), filepath.Join(cfg.out, "npm", mainPackage))
	fmt.Fprintf(stdout, "  MCP Registry, once npm has %s@%s: cd %s && mcp-publisher publish\n", mainPackage, cfg.version, cfg.out)
	return nil
}

// sourceTime returns the time the archives give their files, so that two
// builds of one commit make the same archives: $SOURCE_DATE_EPOCH when set,
// else HEAD's commit time, else now.
func sourceTime(ctx context.Context, root string) time.Time {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		s, _ = gitOutput(ctx, root, "log", "-1", "--format=%ct", "HEAD")
	}
	if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(sec, 0).UTC()
	}
	return time.Now().UTC().Truncate(time.Second)
}

func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("git %s: %s", args[0], bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("git %s: %w", args[0], err)
	}
	return strings.TrimSpace(string(out)), nil
}

// goBuild builds the mcp-stdio binary for t, as released, into dst.
func goBuild(ctx context.Context, root string, t target, version, dst string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+version,
		"-o", dst, "./cmd/mcp-stdio")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.goos, "GOARCH="+t.goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %v: %w\n%s", t, err, out)
	}
	return nil
}

// release writes the whole release into cfg.out.
func release(ctx context.Context, cfg config) error {
	if entries, err := os.ReadDir(cfg.out); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty; remove it first", cfg.out)
	}
	readme, err := os.ReadFile(filepath.Join(cfg.root, "README.md"))
	if err != nil {
		return err
	}
	binDir := filepath.Join(cfg.out, "bin")
	var archives []string
	for _, t := range cfg.targets {
		bin := filepath.Join(binDir, t.goos+"_"+t.goarch, t.executable())
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return err
		}
		if err := cfg.build(ctx, cfg.root, t, cfg.version, bin); err != nil {
			return err
		}
		bb, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		name := t.archive(cfg.version)
		files := []archiveFile{{t.executable(), 0o755, bb}, {"README.md", 0o644, readme}}
		if err := writeArchive(filepath.Join(cfg.out, name), files, cfg.modTime); err != nil {
			return err
		}
		archives = append(archives, name)
		if err := writePlatformPackage(filepath.Join(cfg.out, "npm", t.npmOS()+"-"+t.npmCPU()), cfg.root, t, cfg.version, bin); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(binDir); err != nil {
		return err
	}
	if err := writeChecksums(cfg.out, archives); err != nil {
		return err
	}
	if err := writeMainPackage(filepath.Join(cfg.out, "npm", mainPackage), cfg.root, cfg.version, cfg.targets); err != nil {
		return err
	}
	return writeServerJSON(filepath.Join(cfg.out, "server.json"), cfg.root, cfg.version)
}

// archiveFile is one file of an archive.
type archiveFile struct {
	name string
	mode fs.FileMode
	data []byte
}

// writeArchive writes files into a new archive at path: a zip file when
// path ends in .zip, else a gzipped tar file. Every file has modTime and
// no owner, so that the archive depends on nothing but its contents.
func writeArchive(path string, files []archiveFile, modTime time.Time) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if strings.HasSuffix(path, ".zip") {
		zw := zip.NewWriter(f)
		for _, a := range files {
			h := &zip.FileHeader{Name: a.name, Method: zip.Deflate, Modified: modTime}
			h.SetMode(a.mode)
			w, err := zw.CreateHeader(h)
			if err != nil {
				return err
			}
			if _, err := w.Write(a.data); err != nil {
				return err
			}
		}
		return zw.Close()
	}
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	gz.ModTime = modTime
	tw := tar.NewWriter(gz)
	for _, a := range files {
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     a.name,
			Mode:     int64(a.mode.Perm()),
			Size:     int64(len(a.data)),
			ModTime:  modTime,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(a.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// writeChecksums writes dir/SHA256SUMS for the named files of dir, one
// "HEX  NAME" line each in name order: what sha256sum -c (and shasum -a
// 256 -c) check.
func writeChecksums(dir string, names []string) error {
	var b strings.Builder
	for _, name := range slices.Sorted(slices.Values(names)) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// platformManifest is the package.json of a target's npm package.
type platformManifest struct {
	Name        string     `json:"name"`
	Version     string     `json:"version"`
	Description string     `json:"description"`
	Homepage    string     `json:"homepage"`
	Repository  repository `json:"repository"`
	OS          []string   `json:"os"`
	CPU         []string   `json:"cpu"`
	// PreferUnplugged asks Yarn's Plug'n'Play to keep the package on
	// disk, where the binary can be run.
	PreferUnplugged bool `json:"preferUnplugged"`
}

type repository struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// writePlatformPackage writes t's npm package into dir: its package.json
// (with the main package's homepage and repository) and the binary at bin/,
// copied from bin.
func writePlatformPackage(dir, root string, t target, version, bin string) error {
	tmpl, err := os.ReadFile(filepath.Join(root, templateDir, "npm", mainPackage, "package.json"))
	if err != nil {
		return err
	}
	m := platformManifest{
		Name:        t.npmPackage(),
		Version:     version,
		Description: fmt.Sprintf("The %s binary for %s (installed by the %s package)", command, t, mainPackage),
		Homepage:    gjson.GetBytes(tmpl, "homepage").String(),
		Repository: repository{
			Type: gjson.GetBytes(tmpl, "repository.type").String(),
			URL:  gjson.GetBytes(tmpl, "repository.url").String(),
		},
		OS:              []string{t.npmOS()},
		CPU:             []string{t.npmCPU()},
		PreferUnplugged: true,
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), append(manifest, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bin", t.executable()), data, 0o755)
}

// writeMainPackage writes the mcp-stdio npm package into dir: the template's
// files, with version set and the packages of targets, at that version, as
// optionalDependencies.
func writeMainPackage(dir, root, version string, targets []target) error {
	src := filepath.Join(root, templateDir, "npm", mainPackage)
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		return err
	}
	// The launcher is run as a command wherever npm links it.
	if err := os.Chmod(filepath.Join(dir, "bin", command+".js"), 0o755); err != nil {
		return err
	}
	manifest := filepath.Join(dir, "package.json")
	b, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	deps := []byte("{")
	for i, t := range targets {
		if i > 0 {
			deps = append(deps, ',')
		}
		deps = fmt.Appendf(deps, "\n    %q: %q", t.npmPackage(), version)
	}
	deps = append(deps, "\n  }"...)
	if b, err = sjson.SetBytes(b, "version", version); err != nil {
		return err
	}
	if b, err = sjson.SetRawBytes(b, "optionalDependencies", deps); err != nil {
		return err
	}
	return os.WriteFile(manifest, b, 0o644)
}

// writeServerJSON writes the MCP Registry entry to path: the template with
// version set, for the server and for its npm package.
func writeServerJSON(path, root, version string) error {
	b, err := os.ReadFile(filepath.Join(root, templateDir, "server.json"))
	if err != nil {
		return err
	}
	if b, err = sjson.SetBytes(b, "version", version); err != nil {
		return err
	}
	found := false
	for i, p := range gjson.GetBytes(b, "packages").Array() {
		if p.Get("registryType").String() == "npm" && p.Get("identifier").String() == mainPackage {
			if b, err = sjson.SetBytes(b, fmt.Sprintf("packages.%d.version", i), version); err != nil {
				return err
			}
			found = true
		}
	}
	if !found {
		return fmt.Errorf("%s/server.json lists no npm package %s", templateDir, mainPackage)
	}
	return os.WriteFile(path, b, 0o644)
}
