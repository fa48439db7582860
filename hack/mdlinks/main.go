// Command mdlinks checks the links of the repository's Markdown files: every
// relative link must name a file or directory that exists, and every #anchor a
// heading of its target file (by GitHub's slug rules) or an HTML id or name in
// it. Links with a scheme (https:, mailto:, ...) are not fetched.
//
// Usage: go run ./hack/mdlinks [-root DIR] [FILE.md ...]
//
// Without files it checks every *.md file git tracks under the root. It prints
// one line per broken link, FILE:LINE: DESTINATION: PROBLEM, and exits 1 when
// there is any.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

func main() {
	root := flag.String("root", ".", "the repository root: links starting with / and the git file list are relative to it")
	flag.Parse()
	os.Exit(run(*root, flag.Args(), os.Stdout))
}

// run checks files (or, when none are given, every tracked *.md file) and
// reports to out; it returns the exit code.
func run(root string, files []string, out io.Writer) int {
	if len(files) == 0 {
		var err error
		if files, err = trackedMarkdown(root); err != nil {
			fmt.Fprintln(out, "mdlinks:", err)
			return 2
		}
	} else {
		for i, f := range files {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				fmt.Fprintln(out, "mdlinks:", err)
				return 2
			}
			files[i] = filepath.ToSlash(rel)
		}
	}
	c := newChecker(root)
	problems, links, err := c.check(files)
	if err != nil {
		fmt.Fprintln(out, "mdlinks:", err)
		return 2
	}
	for _, p := range problems {
		fmt.Fprintln(out, p)
	}
	fmt.Fprintf(out, "mdlinks: %d files, %d links, %d broken\n", len(files), links, len(problems))
	if len(problems) > 0 {
		return 1
	}
	return 0
}

// trackedMarkdown lists the *.md files git tracks under root that exist in the
// work tree, relative to root.
func trackedMarkdown(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--", "*.md")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	for _, f := range strings.Split(string(outb), "\x00") {
		if f == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	return files, nil
}

// checker resolves links against the files under root, parsing each Markdown
// target once.
type checker struct {
	root string
	docs map[string]*doc
}

func newChecker(root string) *checker {
	return &checker{root: root, docs: map[string]*doc{}}
}

// problem is one broken link.
type problem struct {
	file string
	line int
	dest string
	why  string
}

func (p problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.file, p.line, p.dest, p.why)
}

// check checks every link of files (slash-separated, relative to the root)
// and returns the broken ones and how many links it checked.
func (c *checker) check(files []string) ([]problem, int, error) {
	var problems []problem
	links := 0
	for _, f := range files {
		d, err := c.doc(f)
		if err != nil {
			return nil, 0, err
		}
		for _, l := range d.links {
			links++
			if why := c.resolve(f, l.dest); why != "" {
				problems = append(problems, problem{file: f, line: l.line, dest: l.dest, why: why})
			}
		}
	}
	return problems, links, nil
}

func (c *checker) doc(file string) (*doc, error) {
	if d, ok := c.docs[file]; ok {
		return d, nil
	}
	src, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	d := parse(string(src))
	c.docs[file] = &d
	return &d, nil
}

var (
	schemeRe     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	lineAnchorRe = regexp.MustCompile(`^L[0-9]+(C[0-9]+)?(-L[0-9]+(C[0-9]+)?)?$`)
)

// resolve says what is wrong with dest, a link in file, or "" when it resolves.
func (c *checker) resolve(file, dest string) string {
	dest = strings.TrimSpace(dest)
	switch {
	case dest == "":
		return "empty link"
	case schemeRe.MatchString(dest), strings.HasPrefix(dest, "//"):
		return "" // external: not fetched
	}
	target, fragment, _ := strings.Cut(dest, "#")
	target, _, _ = strings.Cut(target, "?")
	path, err := url.PathUnescape(target)
	if err != nil {
		return "bad escape in the path"
	}
	var rel string
	switch {
	case path == "":
		rel = file
	case strings.HasPrefix(path, "/"):
		rel = filepath.ToSlash(filepath.Clean(strings.TrimPrefix(path, "/")))
	default:
		rel = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "points outside the repository"
	}
	info, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(rel)))
	if errors.Is(err, os.ErrNotExist) {
		return "no such file or directory " + rel
	}
	if err != nil {
		return err.Error()
	}
	if fragment == "" {
		if strings.Contains(dest, "#") {
			return "empty anchor"
		}
		return ""
	}
	anchor, err := url.PathUnescape(fragment)
	if err != nil {
		return "bad escape in the anchor"
	}
	anchor = strings.TrimPrefix(anchor, "user-content-")
	switch ext := strings.ToLower(filepath.Ext(rel)); {
	case info.IsDir():
		return "an anchor on a directory"
	case ext == ".md" || ext == ".markdown":
		d, err := c.doc(rel)
		if err != nil {
			return err.Error()
		}
		if !d.anchors[anchor] {
			return fmt.Sprintf("no heading or id %q in %s", anchor, rel)
		}
	case !lineAnchorRe.MatchString(anchor):
		return fmt.Sprintf("anchor %q in %s is not a line anchor (L12, L12-L20)", anchor, rel)
	}
	return ""
}
