package main

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// link is one link destination found in a Markdown file.
type link struct {
	dest string
	line int
}

// doc is what a Markdown file offers and asks: its links, and the anchors
// other links may name (heading slugs and explicit HTML ids).
type doc struct {
	links   []link
	anchors map[string]bool
}

var (
	fenceRe      = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")
	atxRe        = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextRe     = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	refDefRe     = regexp.MustCompile(`^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>]*>|\S+)`)
	htmlAttrRe   = regexp.MustCompile(`(?i)<[a-z][^>]*?\s(href|src)\s*=\s*"([^"]*)"`)
	htmlIDRe     = regexp.MustCompile(`(?i)<[a-z][^>]*?\s(?:id|name)\s*=\s*"([^"]*)"`)
	autolinkRe   = regexp.MustCompile(`<[a-zA-Z][a-zA-Z0-9+.-]*:[^\s<>]*>`)
	imageRe      = regexp.MustCompile(`!\[[^\]]*\]\([^)]*\)`)
	inlineLinkRe = regexp.MustCompile(`\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])`)
	htmlTagRe    = regexp.MustCompile(`</?[a-zA-Z][^>]*>`)
	underEmphRe  = regexp.MustCompile(`(^|[^\p{L}\p{N}_])_+([^_]+?)_+($|[^\p{L}\p{N}_])`)
)

// parse reads a Markdown document the way GitHub renders it, closely enough for
// link checking: fenced code blocks and code spans hold no links or headings;
// ATX and setext headings give anchors by GitHub's slug rules.
func parse(src string) doc {
	d := doc{anchors: map[string]bool{}}
	s := slugger{}
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var (
		fence      string // the open fence's characters, "" outside one
		block      []string
		blockStart int
		prevText   bool // the previous line can be a setext heading's text
	)
	flush := func() {
		if len(block) > 0 {
			d.links = append(d.links, blockLinks(strings.Join(block, "\n"), blockStart)...)
			for _, id := range htmlIDs(strings.Join(block, "\n")) {
				d.anchors[id] = true
			}
		}
		block = nil
	}
	for i, line := range lines {
		n := i + 1
		if fence != "" {
			if m := fenceRe.FindStringSubmatch(line); m != nil && m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(m[2]) == "" {
				fence = ""
			}
			continue
		}
		if m := fenceRe.FindStringSubmatch(line); m != nil && (m[1][0] == '~' || !strings.Contains(m[2], "`")) {
			flush()
			fence, prevText = m[1], false
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			prevText = false
			continue
		}
		if m := atxRe.FindStringSubmatch(line); m != nil {
			flush()
			d.anchors[s.slug(headingText(m[2]))] = true
			d.links = append(d.links, blockLinks(m[2], n)...)
			prevText = false
			continue
		}
		if m := setextRe.FindStringSubmatch(line); m != nil && prevText && len(block) > 0 {
			// The paragraph so far is the heading's text.
			text := strings.Join(block, " ")
			flush()
			d.anchors[s.slug(headingText(text))] = true
			d.links = append(d.links, blockLinks(text, n-1)...)
			prevText = false
			continue
		}
		if m := refDefRe.FindStringSubmatch(line); m != nil {
			flush()
			d.links = append(d.links, link{dest: strings.Trim(m[2], "<>"), line: n})
			prevText = false
			continue
		}
		if len(block) == 0 {
			blockStart = n
		}
		block = append(block, line)
		prevText = paragraphLine(line) && paragraphLine(block[0])
	}
	flush()
	return d
}

// paragraphLine: the line is plain paragraph text, which a following === or
// --- line turns into a heading (not a list item, table row, quote or HTML).
func paragraphLine(line string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) >= 4 {
		return false
	}
	for _, p := range []string{"|", ">", "<", "- ", "* ", "+ "} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	return i == 0 || i >= len(t) || (t[i] != '.' && t[i] != ')')
}

// codeSpans marks the bytes of text inside code spans (backtick runs, which may
// span lines), the backticks included.
func codeSpans(text string) []bool {
	mask := make([]bool, len(text))
	i := 0
	for i < len(text) {
		if text[i] == '\\' {
			i += 2
			continue
		}
		if text[i] != '`' {
			i++
			continue
		}
		start := i
		for i < len(text) && text[i] == '`' {
			i++
		}
		run := i - start
		// Find the closing run of the same length.
		j := i
		closed := -1
		for j < len(text) {
			if text[j] != '`' {
				j++
				continue
			}
			k := j
			for k < len(text) && text[k] == '`' {
				k++
			}
			if k-j == run {
				closed = k
				break
			}
			j = k
		}
		if closed < 0 {
			continue // a literal backtick run
		}
		for k := start; k < closed; k++ {
			mask[k] = true
		}
		i = closed
	}
	return mask
}

// blockLinks finds the inline link and image destinations, autolinks and HTML
// href/src attributes of a block of text that starts at line first.
func blockLinks(text string, first int) []link {
	mask := codeSpans(text)
	lineAt := func(off int) int { return first + strings.Count(text[:off], "\n") }
	var out []link
	for i := 0; i+1 < len(text); i++ {
		if mask[i] || text[i] != ']' || text[i+1] != '(' || (i > 0 && text[i-1] == '\\') {
			continue
		}
		if dest, ok := destination(text[i+2:]); ok {
			out = append(out, link{dest: dest, line: lineAt(i)})
		}
	}
	for _, m := range autolinkRe.FindAllStringIndex(text, -1) {
		if !mask[m[0]] {
			out = append(out, link{dest: text[m[0]+1 : m[1]-1], line: lineAt(m[0])})
		}
	}
	for _, m := range htmlAttrRe.FindAllStringSubmatchIndex(text, -1) {
		if !mask[m[0]] {
			out = append(out, link{dest: text[m[4]:m[5]], line: lineAt(m[0])})
		}
	}
	return out
}

// destination reads an inline link's destination from the text after "](":
// <...>, or up to the first space or unbalanced ")"; ok is false when the
// parenthesis never closes (not a link).
func destination(s string) (string, bool) {
	s = strings.TrimLeft(s, " \t\n")
	if strings.HasPrefix(s, "<") {
		end := strings.IndexAny(s, ">\n")
		if end < 0 || s[end] != '>' {
			return "", false
		}
		return s[1:end], true
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '(':
			depth++
		case c == ')' && depth == 0:
			return s[:i], true
		case c == ')':
			depth--
		case c == ' ' || c == '\t' || c == '\n':
			rest := strings.TrimLeft(s[i:], " \t\n")
			// A title may follow the destination.
			if strings.HasPrefix(rest, ")") || strings.HasPrefix(rest, `"`) || strings.HasPrefix(rest, "'") || strings.HasPrefix(rest, "(") {
				return s[:i], true
			}
			return "", false
		}
	}
	return "", false
}

// htmlIDs are the id and name attributes of HTML tags outside code spans.
func htmlIDs(text string) []string {
	mask := codeSpans(text)
	var out []string
	for _, m := range htmlIDRe.FindAllStringSubmatchIndex(text, -1) {
		if !mask[m[0]] {
			out = append(out, text[m[2]:m[3]])
		}
	}
	return out
}

// headingText is the text GitHub renders for a heading's Markdown: code spans
// keep their content, links their text, images and HTML tags nothing, and
// emphasis loses its delimiters.
func headingText(md string) string {
	mask := codeSpans(md)
	var b strings.Builder
	var plain strings.Builder
	flushPlain := func() {
		t := plain.String()
		t = imageRe.ReplaceAllString(t, "")
		t = inlineLinkRe.ReplaceAllString(t, "$1")
		t = htmlTagRe.ReplaceAllString(t, "")
		for {
			u := underEmphRe.ReplaceAllString(t, "$1$2$3")
			if u == t {
				break
			}
			t = u
		}
		b.WriteString(t)
		plain.Reset()
	}
	for i := 0; i < len(md); {
		if !mask[i] {
			plain.WriteByte(md[i])
			i++
			continue
		}
		flushPlain()
		j := i
		for j < len(md) && mask[j] {
			j++
		}
		b.WriteString(strings.Trim(md[i:j], "`"))
		i = j
	}
	flushPlain()
	return strings.TrimSpace(b.String())
}

// slugger gives GitHub's heading anchors: a repeated slug gets -1, -2, ...
type slugger map[string]int

func (s slugger) slug(text string) string {
	base := slug(text)
	out := base
	for {
		if _, seen := s[out]; !seen {
			break
		}
		s[base]++
		out = base + "-" + strconv.Itoa(s[base])
	}
	s[out] = 0
	return out
}

// slug is GitHub's anchor for a heading's text (github-slugger): lower case,
// every character but letters, digits, marks, spaces, '-' and '_' removed, and
// each space a '-'.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
