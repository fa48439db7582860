package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Time in tests", "time-in-tests"},
		{"Set-up: two commands", "set-up-two-commands"},
		{"What's in the box?", "whats-in-the-box"},
		{"v1.8 → v1.9", "v18--v19"},
		{"The `make run` demo", "the-make-run-demo"},
		{"foo_bar and __init__ and snake_case_name", "foo_bar-and-init-and-snake_case_name"},
		{"**Bold** and _emphasis_", "bold-and-emphasis"},
		{"A [link](https://example.com) here", "a-link-here"},
		{"Über Größe", "über-größe"},
		{"1. Numbered", "1-numbered"},
		{"C++ & Go", "c--go"},
		{"Image ![alt](x.png) gone", "image--gone"},
		{"<a name=\"x\"></a>Tagged", "tagged"},
	} {
		if got := slug(headingText(tc.heading)); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestSluggerRepeats(t *testing.T) {
	s := slugger{}
	var got []string
	for _, h := range []string{"Usage", "Usage", "Usage-1", "Usage"} {
		got = append(got, s.slug(h))
	}
	want := []string{"usage", "usage-1", "usage-1-1", "usage-2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("slugs %q, want %q", got, want)
	}
}

func TestParseAnchors(t *testing.T) {
	src := strings.Join([]string{
		"# Title #",
		"",
		"Setext one",
		"==========",
		"",
		"Setext two",
		"---",
		"",
		"- a list item",
		"",
		"---",
		"",
		"```sh",
		"# not a heading",
		"```",
		"",
		"~~~",
		"## nor this",
		"~~~",
		"",
		"| a | b |",
		"|---|---|",
		"",
		"## Title",
		"",
		`<a id="explicit"></a>`,
		"",
		"    # indented code is not a heading here",
	}, "\n")
	d := parse(src)
	var got []string
	for a := range d.anchors {
		got = append(got, a)
	}
	sort.Strings(got)
	want := []string{"explicit", "setext-one", "setext-two", "title", "title-1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("anchors %q, want %q", got, want)
	}
}

func TestParseLinks(t *testing.T) {
	src := strings.Join([]string{
		"See [the docs](docs/a.md#x) and ![img](img/p.png \"title\").",
		"A [link with (parens)](f(1).md) and [angle](<with space.md>).",
		"`[not](code.md)` and ``[nor](this.md) ` `` but [yes](y.md).",
		"A code span `that spans",
		"two lines [no](no.md)` and [after](after.md).",
		"An <https://example.com> autolink and <a href=\"h.md\">html</a>.",
		"[escaped\\](e.md) is no link; [ref]: ref.md is text here.",
		"",
		"[ref]: <defined.md>",
		"",
		"```",
		"[in](fence.md)",
		"```",
		"## Heading with [a link](head.md)",
	}, "\n")
	d := parse(src)
	got := map[string]int{}
	for _, l := range d.links {
		got[l.dest] = l.line
	}
	want := map[string]int{
		"docs/a.md#x": 1, "img/p.png": 1, "f(1).md": 2, "with space.md": 2, "y.md": 3,
		"after.md": 5, "https://example.com": 6, "h.md": 6, "defined.md": 9, "head.md": 14,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("links %v, want %v", got, want)
	}
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", strings.Join([]string{
		"# Top",
		"[ok](docs/user/a.md) [ok](docs/user/a.md#the-part) [ok](#top) [ok](docs/)",
		"[ok](/main.go#L3) [ok](main.go#L3-L9) [ok](https://example.com/x#y) [ok](mailto:a@b.c)",
		"[ok](docs/user/a.md#explicit) [ok](docs/user/a%20b.md) [ok](#user-content-top)",
		"[broken](docs/user/missing.md)",
		"[broken](docs/user/a.md#no-such-part)",
		"[broken](#nowhere)",
		"[broken](main.go#func)",
		"[broken](../outside.md)",
		"[broken](docs#x)",
	}, "\n"))
	write("docs/user/a.md", "# A\n\n## The part\n\n<a name=\"explicit\"></a>\n\n[ok](../../README.md#top) [broken](b.md)\n")
	write("docs/user/a b.md", "# Spaced\n")
	write("main.go", "package main\n")

	c := newChecker(root)
	problems, links, err := c.check([]string{"README.md", "docs/user/a.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		"README.md:5: docs/user/missing.md: no such file or directory docs/user/missing.md",
		`README.md:6: docs/user/a.md#no-such-part: no heading or id "no-such-part" in docs/user/a.md`,
		`README.md:7: #nowhere: no heading or id "nowhere" in README.md`,
		`README.md:8: main.go#func: anchor "func" in main.go is not a line anchor (L12, L12-L20)`,
		"README.md:9: ../outside.md: points outside the repository",
		"README.md:10: docs#x: an anchor on a directory",
		"docs/user/a.md:7: b.md: no such file or directory docs/user/b.md",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if links != 19 {
		t.Errorf("%d links checked, want 19", links)
	}
}

func TestRunExitCode(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "ok.md"), []byte("# Ok\n[self](#ok)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bad.md"), []byte("[gone](gone.md)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run(root, []string{filepath.Join(root, "ok.md")}, &out); code != 0 {
		t.Errorf("exit %d for a clean file:\n%s", code, out.String())
	}
	out.Reset()
	if code := run(root, []string{filepath.Join(root, "bad.md")}, &out); code != 1 {
		t.Errorf("exit %d for a broken link, want 1:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "bad.md:1: gone.md: no such file or directory gone.md") {
		t.Errorf("output lacks the broken link:\n%s", out.String())
	}
}
