package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
)

// moduleRoot is the module's root as seen from this package's directory,
// where go test runs its tests.
const moduleRoot = "../../../.."

// fakeBuild stands in for goBuild: the "binary" names its target and
// version, so that each archive and package can be checked to hold its
// own.
func fakeBuild(_ context.Context, _ string, t target, version, dst string) error {
	return os.WriteFile(dst, []byte(fakeBinary(t, version)), 0o755)
}

func fakeBinary(t target, version string) string { return "binary " + t.String() + " " + version }

// fakeRelease writes a release of version built with fakeBuild into a
// fresh directory and returns it.
func fakeRelease(t *testing.T, version string, modTime time.Time) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "dist")
	err := release(context.Background(), config{
		root: moduleRoot, out: out, version: version, targets: releaseTargets(),
		modTime: modTime, build: fakeBuild,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// files lists the regular files under dir, slash-separated and sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// A release holds, for each of the six targets, an archive and an npm
// package; the main npm package; SHA256SUMS; server.json; and nothing
// else (the binaries built on the way are gone).
func TestReleaseLayout(t *testing.T) {
	is := is.New(t)
	out := fakeRelease(t, "1.2.3-rc.1", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	is.Equal(files(t, out), []string{
		"SHA256SUMS",
		"mcp-stdio_1.2.3-rc.1_darwin_amd64.tar.gz",
		"mcp-stdio_1.2.3-rc.1_darwin_arm64.tar.gz",
		"mcp-stdio_1.2.3-rc.1_linux_amd64.tar.gz",
		"mcp-stdio_1.2.3-rc.1_linux_arm64.tar.gz",
		"mcp-stdio_1.2.3-rc.1_windows_amd64.zip",
		"mcp-stdio_1.2.3-rc.1_windows_arm64.zip",
		"npm/darwin-arm64/bin/mcp-stdio",
		"npm/darwin-arm64/package.json",
		"npm/darwin-x64/bin/mcp-stdio",
		"npm/darwin-x64/package.json",
		"npm/linux-arm64/bin/mcp-stdio",
		"npm/linux-arm64/package.json",
		"npm/linux-x64/bin/mcp-stdio",
		"npm/linux-x64/package.json",
		"npm/mcp-stdio/README.md",
		"npm/mcp-stdio/bin/mcp-stdio.js",
		"npm/mcp-stdio/package.json",
		"npm/win32-arm64/bin/mcp-stdio.exe",
		"npm/win32-arm64/package.json",
		"npm/win32-x64/bin/mcp-stdio.exe",
		"npm/win32-x64/package.json",
		"server.json",
	})
}

// archiveEntry is what an archive says of one file.
type archiveEntry struct {
	name    string
	mode    os.FileMode
	modTime time.Time
	data    string
}

func (e archiveEntry) String() string {
	return fmt.Sprintf("%s %v %s %q", e.name, e.mode, e.modTime.UTC().Format(time.RFC3339), e.data)
}

// readArchive returns the files of a .tar.gz or .zip archive.
func readArchive(t *testing.T, path string) []string {
	t.Helper()
	var entries []string
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, archiveEntry{f.Name, f.Mode(), f.Modified, string(data)}.String())
		}
		return entries
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: %s has an owner (%d/%d %q/%q)", path, h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, archiveEntry{h.Name, h.FileInfo().Mode(), h.ModTime, string(data)}.String())
	}
	return entries
}

// Each archive holds its own target's binary (executable) and the README,
// at the top, with the source's time.
func TestReleaseArchives(t *testing.T) {
	is := is.New(t)
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := fakeRelease(t, "1.2.3", when)
	readme, err := os.ReadFile(filepath.Join(moduleRoot, "README.md"))
	is.NoErr(err)
	for _, tg := range releaseTargets() {
		got := readArchive(t, filepath.Join(out, tg.archive("1.2.3")))
		is.Equal(got, []string{
			archiveEntry{tg.executable(), 0o755, when, fakeBinary(tg, "1.2.3")}.String(),
			archiveEntry{"README.md", 0o644, when, string(readme)}.String(),
		}) // the archive's files
	}
}

// SHA256SUMS lists every archive, in order, in the format sha256sum -c
// reads, with the right sums.
func TestReleaseChecksums(t *testing.T) {
	is := is.New(t)
	out := fakeRelease(t, "1.2.3", time.Unix(0, 0))
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	is.NoErr(err)
	lines := strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n")
	var names []string
	line := regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("SHA256SUMS line %q is not HEX  NAME", l)
		}
		data, err := os.ReadFile(filepath.Join(out, m[2]))
		is.NoErr(err)
		sum := sha256.Sum256(data)
		is.Equal(m[1], hex.EncodeToString(sum[:])) // the sum of m[2]
		names = append(names, m[2])
	}
	var want []string
	for _, tg := range releaseTargets() {
		want = append(want, tg.archive("1.2.3"))
	}
	slices.Sort(want)
	is.Equal(names, want)
}

// Two builds of the same binaries make the same archives, byte for byte.
func TestReleaseArchivesAreReproducible(t *testing.T) {
	is := is.New(t)
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, err := os.ReadFile(filepath.Join(fakeRelease(t, "1.2.3", when), "SHA256SUMS"))
	is.NoErr(err)
	b, err := os.ReadFile(filepath.Join(fakeRelease(t, "1.2.3", when), "SHA256SUMS"))
	is.NoErr(err)
	is.Equal(string(a), string(b))
}

// Each platform package is named and fenced for npm as the launcher looks
// for it, and carries its own binary.
func TestReleasePlatformPackages(t *testing.T) {
	is := is.New(t)
	out := fakeRelease(t, "1.2.3", time.Unix(0, 0))
	node := map[target][3]string{ // name, os, cpu as Node says them
		{"linux", "amd64"}:   {"@mcp-stdio/linux-x64", "linux", "x64"},
		{"linux", "arm64"}:   {"@mcp-stdio/linux-arm64", "linux", "arm64"},
		{"darwin", "amd64"}:  {"@mcp-stdio/darwin-x64", "darwin", "x64"},
		{"darwin", "arm64"}:  {"@mcp-stdio/darwin-arm64", "darwin", "arm64"},
		{"windows", "amd64"}: {"@mcp-stdio/win32-x64", "win32", "x64"},
		{"windows", "arm64"}: {"@mcp-stdio/win32-arm64", "win32", "arm64"},
	}
	for _, tg := range releaseTargets() {
		want := node[tg]
		dir := filepath.Join(out, "npm", want[1]+"-"+want[2])
		pj, err := os.ReadFile(filepath.Join(dir, "package.json"))
		is.NoErr(err)
		is.True(gjson.ValidBytes(pj))
		is.Equal(gjson.GetBytes(pj, "name").String(), want[0])
		is.Equal(gjson.GetBytes(pj, "version").String(), "1.2.3")
		is.Equal(gjson.GetBytes(pj, "os|@ugly").Raw, `["`+want[1]+`"]`)
		is.Equal(gjson.GetBytes(pj, "cpu|@ugly").Raw, `["`+want[2]+`"]`)
		is.True(!gjson.GetBytes(pj, "bin").Exists()) // the main package's bin is the only mcp-stdio command
		exe := filepath.Join(dir, "bin", tg.executable())
		data, err := os.ReadFile(exe)
		is.NoErr(err)
		is.Equal(string(data), fakeBinary(tg, "1.2.3"))
	}
}

// The main package is the template with the version stamped in and every
// platform package, at that version, as an optional dependency; its bin is
// the launcher.
func TestReleaseMainPackage(t *testing.T) {
	is := is.New(t)
	out := fakeRelease(t, "1.2.3", time.Unix(0, 0))
	pj, err := os.ReadFile(filepath.Join(out, "npm", "mcp-stdio", "package.json"))
	is.NoErr(err)
	is.True(gjson.ValidBytes(pj))
	is.Equal(gjson.GetBytes(pj, "name").String(), "mcp-stdio")
	is.Equal(gjson.GetBytes(pj, "version").String(), "1.2.3")
	is.Equal(gjson.GetBytes(pj, "bin.mcp-stdio").String(), "bin/mcp-stdio.js")
	deps := map[string]string{}
	gjson.GetBytes(pj, "optionalDependencies").ForEach(func(k, v gjson.Result) bool {
		deps[k.String()] = v.String()
		return true
	})
	is.Equal(deps, map[string]string{
		"@mcp-stdio/linux-x64": "1.2.3", "@mcp-stdio/linux-arm64": "1.2.3",
		"@mcp-stdio/darwin-x64": "1.2.3", "@mcp-stdio/darwin-arm64": "1.2.3",
		"@mcp-stdio/win32-x64": "1.2.3", "@mcp-stdio/win32-arm64": "1.2.3",
	})
	is.True(!gjson.GetBytes(pj, "dependencies").Exists()) // nothing but the binary is installed

	launcher, err := os.ReadFile(filepath.Join(out, "npm", "mcp-stdio", "bin", "mcp-stdio.js"))
	is.NoErr(err)
	is.True(bytes.HasPrefix(launcher, []byte("#!/usr/bin/env node\n")))
	tmpl, err := os.ReadFile(filepath.Join(moduleRoot, ".release", "npm", "mcp-stdio", "bin", "mcp-stdio.js"))
	is.NoErr(err)
	is.Equal(string(launcher), string(tmpl))
}

// The MCP Registry entry: the template with the version stamped in for the
// server and its npm package, which is the main package, run with npx;
// its name is the main package's mcpName, which is how the registry checks
// that the package is ours; and it keeps to the schema's limits
// (2025-12-11).
func TestReleaseServerJSON(t *testing.T) {
	is := is.New(t)
	out := fakeRelease(t, "1.2.3", time.Unix(0, 0))
	sj, err := os.ReadFile(filepath.Join(out, "server.json"))
	is.NoErr(err)
	is.True(gjson.ValidBytes(sj))
	pj, err := os.ReadFile(filepath.Join(out, "npm", "mcp-stdio", "package.json"))
	is.NoErr(err)

	is.Equal(gjson.GetBytes(sj, "$schema").String(), "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json")
	name := gjson.GetBytes(sj, "name").String()
	is.True(regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`).MatchString(name)) // reverse-DNS/name
	is.Equal(name, gjson.GetBytes(pj, "mcpName").String())
	desc := gjson.GetBytes(sj, "description").String()
	is.True(len(desc) >= 1 && len(desc) <= 100) // the schema's bounds
	is.Equal(gjson.GetBytes(sj, "version").String(), "1.2.3")

	pkgs := gjson.GetBytes(sj, "packages").Array()
	is.Equal(len(pkgs), 1)
	p := pkgs[0]
	is.Equal(p.Get("registryType").String(), "npm")
	is.Equal(p.Get("identifier").String(), gjson.GetBytes(pj, "name").String())
	is.Equal(p.Get("version").String(), "1.2.3")
	is.Equal(p.Get("runtimeHint").String(), "npx")
	is.Equal(p.Get("transport.type").String(), "stdio")
	for _, a := range p.Get("packageArguments").Array() {
		is.True(a.Get("value").Exists() || a.Get("valueHint").Exists()) // a positional argument needs one
	}

	// Only the two versions differ from the template.
	tmpl, err := os.ReadFile(filepath.Join(moduleRoot, ".release", "server.json"))
	is.NoErr(err)
	is.Equal(strings.Count(string(tmpl), `"version": "`), 2)
	stamped := regexp.MustCompile(`"version": "[^"]*"`).ReplaceAll(tmpl, []byte(`"version": "1.2.3"`))
	is.Equal(string(sj), string(stamped))
}

// A release is written only into an empty or new directory.
func TestReleaseRefusesAFullDirectory(t *testing.T) {
	is := is.New(t)
	out := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(out, "old"), nil, 0o644))
	err := release(context.Background(), config{root: moduleRoot, out: out, version: "1.2.3", targets: releaseTargets(), build: fakeBuild})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "not empty"))
}

func TestCheckVersion(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3": "1.2.3", "v1.2.3": "1.2.3", "0.1.0-rc.1": "0.1.0-rc.1", "1.0.0-alpha+build.5": "1.0.0-alpha+build.5",
		"1.2": "", "01.2.3": "", "latest": "", "1.2.3-": "", "^1.2.3": "", "": "",
	} {
		t.Run(in, func(t *testing.T) {
			is := is.New(t)
			got, err := checkVersion(in)
			if want == "" {
				is.True(err != nil) // not a semantic version
				return
			}
			is.NoErr(err)
			is.Equal(got, want)
		})
	}
}

func TestParseTargets(t *testing.T) {
	is := is.New(t)
	ts, err := parseTargets("linux/amd64, windows/arm64,linux/amd64")
	is.NoErr(err)
	is.Equal(ts, []target{{"linux", "amd64"}, {"windows", "arm64"}})
	_, err = parseTargets("linux/386")
	is.True(err != nil) // not a release target
	_, err = parseTargets("linux")
	is.True(err != nil)
}
