package preflight

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/release"
)

// CheckUpgradePath fails an upgrade or rollback that crosses more than one
// minor release.
const CheckUpgradePath = "UpgradePath"

// UpgradePath checks the step from the running release (from, the observed
// version) to the target (to): KubeVirt supports one minor release at a time,
// up (an upgrade) or down (a rollback). A step that skips minors fails and
// names the hops to take instead, each the newest supported patch release of
// its minor. Versions that do not read as releases (a digest, "devel") are not
// judged. The choice to refuse rather than run the hops by itself: each hop is
// an upgrade of its own (its strategy, canary, bake and workload moves), which
// the admin should see succeed before starting the next.
func UpgradePath(from, to string) v1.PreflightCheck {
	c := v1.PreflightCheck{Name: CheckUpgradePath, State: Passed}
	f, errF := version.ParseSemantic(strings.TrimPrefix(from, "v"))
	t, errT := version.ParseSemantic(strings.TrimPrefix(to, "v"))
	switch {
	case from == "":
		c.Message = "a fresh install"
		return c
	case errF != nil || errT != nil:
		c.Message = fmt.Sprintf("%s -> %s: not release versions, the path is not checked", from, to)
		return c
	case f.Major() != t.Major():
		c.State = Failed
		c.Message = fmt.Sprintf("%s -> %s changes the major version, which KubeVirt does not support", from, to)
		return c
	}
	fm, tm := int(f.Minor()), int(t.Minor())
	switch {
	case fm == tm:
		c.Message = fmt.Sprintf("%s -> %s stays on one minor release", from, to)
		return c
	case tm == fm+1:
		c.Message = fmt.Sprintf("%s -> %s is one minor release up", from, to)
		return c
	case tm == fm-1:
		c.Message = fmt.Sprintf("%s -> %s rolls back one minor release", from, to)
		return c
	}
	step, what := 1, "skips"
	if tm < fm {
		step, what = -1, "rolls back over"
	}
	var hops []string
	for m := fm + step; m != tm; m += step {
		hops = append(hops, hopVersion(int(f.Major()), m))
	}
	hops = append(hops, to)
	c.State = Failed
	c.Message = fmt.Sprintf("%s -> %s %s %d minor release(s); KubeVirt supports one at a time: set spec.imageTag to %s, "+
		"let each finish (phase Deployed, observed == target), in order: %s", from, to, what, len(hops)-1,
		hops[0], strings.Join(hops, ", then "))
	return c
}

// hopVersion is the newest supported release of major.minor, or "vMAJOR.MINOR.x"
// when none is (a delegated release: any of its patch releases).
func hopVersion(major, minor int) string {
	for _, r := range release.Supported() { // newest first
		if v, err := version.ParseSemantic(strings.TrimPrefix(r.Version, "v")); err == nil &&
			int(v.Major()) == major && int(v.Minor()) == minor {
			return r.Version
		}
	}
	return fmt.Sprintf("v%d.%d.x", major, minor)
}
