package kubevirt

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/architecture.md's table of the normal path lists the phases this
// package runs, in order: the list is defined once (phases), and the
// documentation cannot drift from it.
func TestPhasesAreDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (\d+) \| \*\*(\w+)\*\*`)
	var documented []string
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		documented = append(documented, strings.ToLower(m[2]))
	}
	var code []string
	for _, p := range phases {
		code = append(code, p.name)
	}
	if strings.Join(documented, " ") != strings.Join(code, " ") {
		t.Fatalf("docs/architecture.md lists the phases %v, the code runs %v", documented, code)
	}
}
