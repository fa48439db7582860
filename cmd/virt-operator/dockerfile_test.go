package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The image's build context is what the Dockerfile copies: building the binary
// from exactly those paths proves the image builds (no container engine runs here),
// so nothing the code embeds or imports is left out.
func TestDockerfileBuildContextBuilds(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	ctx := t.TempDir()
	copied := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[0] != "COPY" || strings.HasPrefix(fields[1], "--from") {
			continue
		}
		for _, src := range fields[1 : len(fields)-1] {
			if out, err := exec.Command("cp", "-r", filepath.Join(root, src), filepath.Join(ctx, src)).CombinedOutput(); err != nil {
				t.Fatalf("copying %s: %v %s", src, err, out)
			}
			copied++
		}
	}
	if copied < 4 {
		t.Fatalf("only %d COPY sources in the Dockerfile", copied)
	}
	// The Dockerfile's flags: with -trimpath the build cache does not depend on
	// the temporary directory, so after the first run only the link is left.
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(t.TempDir(), "virt-operator"), "./cmd/virt-operator")
	cmd.Dir = ctx
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build context does not build: %v\n%s", err, out)
	}
}
