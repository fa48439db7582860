package sandboxtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// UpstreamDirEnv names the folder of KubeVirt's own binaries (<release>/<name>.xz)
// when it is not ../shared/upstream beside the repository (or an ancestor of it).
const UpstreamDirEnv = "KUBEVIRT_UPSTREAM_DIR"

// upstreamSums are the sha256 of the unpacked binaries, as the folder's README
// lists them: a binary that does not match is not the reference it claims to be.
var upstreamSums = map[string]string{
	"v1.7.4/virt-operator":                   "a828e9c7feae69fcfd04c5041d59919685bb4aa3a4cd6c01a9ae9487fd57ae59",
	"v1.8.4/virt-operator":                   "8374b9be64c21d4299de0ec231aefff873374d690732b45b26a4ae1029111375",
	"v1.9.0/virt-operator":                   "2d740abcf72cebad33f1fd8c74ee1ea405fbce1559785f6723523351374b1a9b",
	"v1.9.0/virt-controller":                 "1904c0d6454b9fcf072c0f57eaa0953015db68be16f149896f15c1d20e0ccd6d",
	"v1.9.0/virt-api":                        "3ad51ae1efc87a63c95341247ca060137aff6c7ca55b42268367b7b5fa4ba0a8",
	"v1.9.0/virt-exportproxy":                "14e0d7e2a62f9749078d0edc88af8b00ad9861499dbd225758ffb410438b38e2",
	"v1.9.0/virt-synchronization-controller": "f07236e267480c07a226935009afe61de5ec7e36e4486588bb74d0c9bdc8317c",
}

// UpstreamDir is the folder of KubeVirt's own binaries, or "" when there is none:
// $KUBEVIRT_UPSTREAM_DIR, else the first shared/upstream beside the repository
// root or one of its ancestors.
func UpstreamDir() string {
	if dir := os.Getenv(UpstreamDirEnv); dir != "" {
		return dir
	}
	for dir := RepoRoot(); ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(filepath.Dir(dir), "shared", "upstream")
		if st, err := os.Stat(candidate); err == nil && st.IsDir() {
			return candidate
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

var (
	unpackMu sync.Mutex
	// verified are the unpacked binaries whose sha256 this process checked: a
	// sum of 100 MB per sandbox start was a second of CPU each time.
	verified = map[string]bool{}
)

// UpstreamBinary returns KubeVirt's own binary name (virt-operator, virt-api, ...)
// of release, unpacked into <repo>/.cache/upstream/<release>/ and checked against
// its sha256 (unpacked once; kept while its checksum holds). Without the folder of
// KubeVirt's binaries the test is skipped, saying why.
func UpstreamBinary(t testing.TB, release, name string) string {
	t.Helper()
	key := release + "/" + name
	want, known := upstreamSums[key]
	if !known {
		t.Fatalf("no KubeVirt reference binary %s is known", key)
	}
	src := UpstreamDir()
	if src == "" {
		t.Skipf("KubeVirt's own binaries are not on this machine (no ../shared/upstream beside the repository, and $%s is unset): this test runs them", UpstreamDirEnv)
	}
	xzFile := filepath.Join(src, release, name+".xz")
	if _, err := os.Stat(xzFile); err != nil {
		t.Skipf("KubeVirt's own %s is not in %s: %v", key, src, err)
	}
	unpackMu.Lock()
	defer unpackMu.Unlock()
	out := filepath.Join(RepoRoot(), ".cache", "upstream", release, name)
	if verified[out] {
		return out
	}
	if sum, err := fileSum(out); err == nil && sum == want {
		verified[out] = true
		return out
	}
	if err := unpack(xzFile, out); err != nil {
		t.Fatalf("unpacking %s: %v", xzFile, err)
	}
	if sum, err := fileSum(out); err != nil || sum != want {
		t.Fatalf("%s unpacked from %s has sha256 %s, want %s (%v)", out, xzFile, sum, want, err)
	}
	verified[out] = true
	return out
}

func unpack(xzFile, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd := exec.Command("xz", "-dc", xzFile)
	cmd.Stdout, cmd.Stderr = f, &stderr
	runErr := cmd.Run()
	if closeErr := f.Close(); runErr == nil {
		runErr = closeErr
	}
	if runErr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("xz -dc: %w %s", runErr, stderr.String())
	}
	return os.Rename(tmp, out)
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
