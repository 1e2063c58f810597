package slotq_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// docPages are the pages whose links TestDocLinks follows: the README,
// CONTRIBUTING.md and every page of docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages in docs/; want them all", len(pages))
	}
	return append([]string{"README.md", "CONTRIBUTING.md"}, pages...)
}

var (
	fence    = regexp.MustCompile("(?m)^ {0,3}(```|~~~)")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	mdLink   = regexp.MustCompile(`!?\[[^\]\n]*\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	heading  = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineLk = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// prose is a page's text outside fenced code blocks, line by line (a
// fenced line is empty), so that line numbers still match.
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	in := ""
	for i, l := range lines {
		if m := fence.FindStringSubmatch(l); m != nil {
			switch {
			case in == "":
				in = m[1]
			case in == m[1]:
				in = ""
			}
			lines[i] = ""
			continue
		}
		if in != "" {
			lines[i] = ""
		}
	}
	return lines
}

// slug is the anchor GitHub gives a heading: its text as rendered
// (inline code's content, a link's text), lower case, with letters,
// digits, '_' and '-' kept, each space a '-', and every other character
// dropped.
func slug(h string) string {
	h = inlineLk.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.Is(unicode.M, r), r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors are a page's headings' anchors; a repeated one gets -1, -2, …
// as GitHub numbers them.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose(text) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"3. Spacing, without drift or bursts — in the queue's form": "3-spacing-without-drift-or-bursts--in-the-queues-form",
		"Keys and max_running":                             "keys-and-max_running",
		"`make run`: the stack in one process":             "make-run-the-stack-in-one-process",
		"Queue state — `pk = Q#<queue>`, `sk = state` (x)": "queue-state--pk--qqueue-sk--state-x",
		"See [the glossary](algorithm.md#glossary)":        "see-the-glossary",
		"slotq queues create":                              "slotq-queues-create",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	a := anchors("# A\n## Usage\n```\n# not a heading\n```\n## Usage\n")
	for _, want := range []string{"a", "usage", "usage-1"} {
		if !a[want] {
			t.Errorf("anchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("anchors: a comment in a code block counted as a heading")
	}
}

// TestDocLinks follows every relative link of the README, CONTRIBUTING.md
// and docs/*.md: the file or folder must exist, and an #anchor must be a
// heading of the page it names, as GitHub spells anchors.
func TestDocLinks(t *testing.T) {
	texts := map[string]string{}
	read := func(p string) (string, bool) {
		if s, ok := texts[p]; ok {
			return s, true
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", false
		}
		texts[p] = string(b)
		return string(b), true
	}
	links := 0
	for _, page := range docPages(t) {
		text, ok := read(page)
		if !ok {
			t.Errorf("%s: missing", page)
			continue
		}
		for n, l := range prose(text) {
			l = codeSpan.ReplaceAllString(l, "``")
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				file, anchor, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = path.Join(path.Dir(page), file)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %s: %s does not exist", page, n+1, target, dest)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link %s: an anchor in %s, which is no Markdown page", page, n+1, target, dest)
					continue
				}
				destText, _ := read(dest)
				if !anchors(destText)[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading with anchor #%s", page, n+1, target, dest, anchor)
				}
			}
		}
	}
	t.Logf("followed %d relative links", links)
	if links < 100 {
		t.Errorf("followed %d links; the pages hold more: is the link pattern broken?", links)
	}
}

// TestReadmeFitsOneScreen holds the README to its size: what is more
// belongs in docs/.
func TestReadmeFitsOneScreen(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 250 {
		t.Errorf("README.md has %d lines; at most 250: move reference material into docs/ and link it", n)
	}
}

var (
	goFile  = regexp.MustCompile("^`((?:[a-z0-9_.-]+/)*[a-z0-9_.-]+\\.go)`$")
	funcRef = regexp.MustCompile("^`([A-Za-z_][A-Za-z0-9_]*\\.)?([A-Za-z_][A-Za-z0-9_]*)`$")
	repoRef = regexp.MustCompile("`((?:internal|pkg|functions|cmd|events|docs)/[A-Za-z0-9_./-]*|[a-z_]+_test\\.go|template\\.yaml)`")
)

// funcsIn are the functions and methods a Go file declares: Name, and
// Type.Name for a method of Type or *Type.
func funcsIn(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Error(err)
		return nil
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		if fd.Recv == nil || len(fd.Recv.List) == 0 {
			out[fd.Name.Name] = true
			continue
		}
		typ := fd.Recv.List[0].Type
		if s, ok := typ.(*ast.StarExpr); ok {
			typ = s.X
		}
		switch x := typ.(type) {
		case *ast.IndexExpr:
			typ = x.X
		case *ast.IndexListExpr:
			typ = x.X
		}
		if id, ok := typ.(*ast.Ident); ok {
			out[id.Name+"."+fd.Name.Name] = true
		}
	}
	return out
}

// TestArchitectureNames holds docs/architecture.md to the code: in its
// tables, a cell that names a Go file is followed by a cell of the
// functions it holds (Name or Type.Name), and each must be declared in
// that file; every path the page names must exist.
func TestArchitectureNames(t *testing.T) {
	const page = "docs/architecture.md"
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for n, l := range strings.Split(string(b), "\n") {
		for _, m := range repoRef.FindAllStringSubmatch(l, -1) {
			if _, err := os.Stat(strings.TrimSuffix(m[1], "/*")); err != nil && !strings.HasSuffix(m[1], "/*") {
				t.Errorf("%s:%d: %s does not exist", page, n+1, m[1])
			}
		}
		if !strings.HasPrefix(l, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "| "), "|")
		for i := 0; i+1 < len(cells); i++ {
			fm := goFile.FindStringSubmatch(strings.TrimSpace(cells[i]))
			if fm == nil {
				continue
			}
			decls := funcsIn(t, fm[1])
			for _, name := range strings.Split(cells[i+1], ",") {
				name = strings.TrimSpace(name)
				if !strings.HasPrefix(name, "`") || strings.Contains(name, "/") {
					continue
				}
				f := funcRef.FindStringSubmatch(name)
				if f == nil {
					t.Errorf("%s:%d: %s beside %s is no function name", page, n+1, name, fm[1])
					continue
				}
				pairs++
				if !decls[f[1]+f[2]] {
					t.Errorf("%s:%d: %s declares no %s%s", page, n+1, fm[1], f[1], f[2])
				}
			}
		}
	}
	t.Logf("checked %d file and function pairs", pairs)
	if pairs < 40 {
		t.Errorf("checked %d file and function pairs; the page names more: is the table pattern broken?", pairs)
	}
}
