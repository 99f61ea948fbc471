package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestContainerfileBuildsAStaticNonRootImage reads the Containerfile: a
// CGO_ENABLED=0 build of ./cmd/mcp-stdio, a base without libc (distroless
// static or scratch), a numeric non-root user, mcp-stdio as the entrypoint.
// That the binary such a build makes is static and runs is
// TestStaticBinaryRuns.
func TestContainerfileBuildsAStaticNonRootImage(t *testing.T) {
	is := is.New(t)
	b, err := os.ReadFile("Containerfile")
	is.NoErr(err)
	cf := string(b)
	is.True(regexp.MustCompile(`(?m)^RUN CGO_ENABLED=0 go build .*\\\n\s+-o /out/mcp-stdio \./cmd/mcp-stdio$`).MatchString(cf))
	froms := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(cf, -1)
	is.True(len(froms) >= 2)
	base := froms[len(froms)-1][1]
	is.True(base == "scratch" || strings.HasPrefix(base, "gcr.io/distroless/static")) // no libc, no shell
	user := containerfileUser(t)
	is.True(user != "0")
	is.True(strings.Contains(cf, `ENTRYPOINT ["/usr/local/bin/mcp-stdio"]`))
}

// TestContainerBuilds builds the image where a container engine runs
// (docker or podman with a working engine, or buildah) and runs its
// `--version`. It needs the network for the base images.
func TestContainerBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a container image")
	}
	engine := ""
	for _, e := range []struct{ name, probe string }{{"podman", "info"}, {"docker", "info"}, {"buildah", "info"}} {
		if _, err := exec.LookPath(e.name); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := exec.CommandContext(ctx, e.name, e.probe).Run()
		cancel()
		if err == nil {
			engine = e.name
			break
		}
	}
	if engine == "" {
		t.Skip("no container engine works here (podman, docker or buildah, with its daemon running where it needs one): the image is not built; TestStaticBinaryRuns checks the binary it would hold")
	}
	is := is.New(t)
	tag := "localhost/mcp-stdio-deploy-test:" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, engine, "build", "-f", "cmd/mcp-stdio/deploy/Containerfile", "--build-arg", "VERSION=9.9.9-test", "-t", tag, ".")
	if engine == "buildah" {
		build.Args = append([]string{engine, "bud"}, build.Args[2:]...)
	}
	build.Dir = "../../.."
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(build.Args, " "), err, out)
	}
	t.Cleanup(func() { _ = exec.Command(engine, "rmi", tag).Run() })
	if engine == "buildah" {
		return // builds only; nothing here runs the image
	}
	got, err := exec.CommandContext(ctx, engine, "run", "--rm", tag, "--version").CombinedOutput()
	is.NoErr(err)
	is.Equal(strings.TrimSpace(string(got)), "mcp-stdio 9.9.9-test")
}
