package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Names of the cluster binaries, as hack/cluster-bins.sh builds them.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// ErrBinariesMissing is wrapped by the error of CheckBinaries (and Up) when a cluster
// binary is not in the binary directory.
var ErrBinariesMissing = errors.New("cluster binaries missing")

// RepoRoot returns the nearest directory at or above the working directory that holds
// a go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found above the working directory")
		}
		dir = parent
	}
}

// DefaultBinDir is $CLUSTER_BINS if set, else <repo root>/.cache/cluster-bins.
func DefaultBinDir() (string, error) {
	if d := os.Getenv("CLUSTER_BINS"); d != "" {
		return filepath.Abs(d)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("finding the cluster binaries (set CLUSTER_BINS): %w", err)
	}
	return filepath.Join(root, ".cache", "cluster-bins"), nil
}

// CheckBinaries returns an error wrapping ErrBinariesMissing unless every cluster
// binary is an executable file in dir.
func CheckBinaries(dir string) error {
	var missing []string
	for _, b := range binaries {
		st, err := os.Stat(filepath.Join(dir, b))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w in %s: run make cluster-bins (missing: %s)", ErrBinariesMissing, dir, strings.Join(missing, ", "))
	}
	return nil
}
