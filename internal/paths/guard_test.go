package paths

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowedAdHoc are the findings of findAdHoc that are not a containment
// question this package answers, keyed "file:function:rule" (file
// relative to the module root), each with the reason. Keep it short: a
// new entry needs a reason a reviewer accepts.
//
// Outside the reach of this test, and so listed here only as a note:
// la_beneath in sandbox/internal/spawn/spawn_linux.c is C, run in the
// child between clone and exec where no Go runs; it mirrors Within over
// the canonical read-write roots that the Go side (mountns_linux.go)
// hands it, none of them "/".
var allowedAdHoc = map[string]string{
	"cmd/lite-agent/chat_input.go:workspaceFiles:prefix-slash": "completion of typed text: whether what the " +
		"person typed so far (\"src/\", \"src/ma\") goes on below the directory rel is a question about a text " +
		"prefix, not a path (Clean would drop the trailing slash that says so)",
}

// TestNoAdHocContainment keeps every "is this path inside that root", and
// every ".git" name test, in this package: it parses every non-test Go
// file of the module and fails on the hand-written forms of those
// questions (see findAdHoc), which drift apart (two of them took a file
// named "..foo" for outside the workspace; two case rules for ".git").
func TestNoAdHocContainment(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not two levels up: %v", err)
	}
	self, _ := filepath.Abs(".")
	seen := map[string]bool{}
	var bad []string
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch n := d.Name(); {
			case p == self:
				return filepath.SkipDir // the one place the answers live
			case p != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")):
				return filepath.SkipDir
			case p != root:
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		found, err := findAdHoc(filepath.ToSlash(rel), src)
		if err != nil {
			return err
		}
		for _, f := range found {
			if _, ok := allowedAdHoc[f.key()]; ok {
				seen[f.key()] = true
				continue
			}
			bad = append(bad, f.String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files found under %s: the walk looks in the wrong place", files, root)
	}
	for _, b := range bad {
		t.Errorf("%s", b)
	}
	if len(bad) > 0 {
		t.Log("ask internal/paths instead: Within, Beneath, Rel (lexical containment), Real (a path as the kernel resolves it), IsGitName, HasGitComponent; or, for a use that is no containment question, add it to allowedAdHoc with the reason")
	}
	for k := range allowedAdHoc {
		if !seen[k] {
			t.Errorf("allowedAdHoc[%q] matches nothing any more: remove it", k)
		}
	}
}

// TestFindAdHoc shows that findAdHoc recognises each form it looks for,
// and leaves alone the look-alikes that are no containment test, so that
// TestNoAdHocContainment cannot pass by looking for the wrong thing.
func TestFindAdHoc(t *testing.T) {
	src := `package x

func relDotDot(ws, p string) bool {
	rel, err := filepath.Rel(ws, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func relPrefix(ws, p string) bool {
	if r, err := filepath.Rel(ws, p); err == nil && !strings.HasPrefix(r, "..") {
		return true
	}
	return false
}

func relLocal(ws, p string) bool {
	r, err := filepath.Rel(ws, p)
	return err == nil && filepath.IsLocal(r)
}

func relSlice(d, p string) bool {
	r, _ := filepath.Rel(d, p)
	return len(r) < 3 || r[:3] != "../"
}

func cleanedEscape(p string) bool { return strings.HasPrefix(filepath.Clean(p), "../") }

func slashPrefix(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }

func sepPrefix(p, root string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(root, "/")+string(filepath.Separator))
}

func cutPrefix(p, dir string) string {
	rest, _ := strings.CutPrefix(p, dir+"/")
	return rest
}

func heldPrefix(p, dir string) bool {
	prefix := dir + "/"
	return strings.HasPrefix(p, prefix)
}

func fixedRoot(p string) bool { return strings.HasPrefix(p, "/proc/") }

func indexSlash(p, root string) bool { return len(p) > len(root) && p[len(root)] == '/' }

func cutThenSlash(p, root string) bool {
	rel, ok := strings.CutPrefix(p, root)
	return ok && (rel == "" || rel[0] == '/')
}

func gitEq(name string) bool { return name == ".git" }

func gitSwitch(name string) bool {
	switch name {
	case ".git":
		return true
	}
	return false
}

func gitFold(name string) bool { return strings.EqualFold(name, ".git") }

func gitContains(rel string) bool { return strings.Contains(rel, "/.git/") }

func fine(p, root, name string) bool {
	rel, err := filepath.Rel(root, p) // computed, never compared with ".."
	_ = rel
	comp := "x"
	return err == nil && comp == ".." && strings.HasPrefix(p, "/") &&
		strings.HasPrefix(name, "image/") && strings.TrimPrefix(p, "./") != "" &&
		filepath.Join(root, ".git") != ""
}
`
	found, err := findAdHoc("x.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range found {
		got[f.fn+":"+f.rule]++
	}
	want := map[string]int{
		"relDotDot:rel-dotdot":     2,
		"relPrefix:rel-dotdot":     1,
		"relLocal:rel-dotdot":      1,
		"relSlice:rel-dotdot":      1,
		"cleanedEscape:rel-dotdot": 1,
		"slashPrefix:prefix-slash": 1,
		"sepPrefix:prefix-slash":   1,
		"cutPrefix:prefix-slash":   1,
		"heldPrefix:prefix-slash":  1,
		"fixedRoot:prefix-slash":   1,
		"indexSlash:index-slash":   1,
		"cutThenSlash:index-slash": 1,
		"gitEq:git-name":           1,
		"gitSwitch:git-name":       1,
		"gitFold:git-name":         1,
		"gitContains:git-name":     1,
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: found %d, want %d", k, got[k], n)
		}
	}
	for k, n := range got {
		if want[k] == 0 {
			t.Errorf("%s: found %d, want none", k, n)
		}
	}
}

// adHoc is one hand-written containment or ".git" test.
type adHoc struct {
	file, fn, rule string
	line           int
	text           string
}

func (f adHoc) key() string { return f.file + ":" + f.fn + ":" + f.rule }

func (f adHoc) String() string {
	return fmt.Sprintf("%s:%d: %s in %s: %s", f.file, f.line, f.rule, f.fn, f.text)
}

// findAdHoc lists the ad-hoc answers in one Go source file:
//
//   - rel-dotdot: the result of filepath.Rel compared with ".." (or a
//     slice of it with "../"), tested with HasPrefix/CutPrefix against
//     "..", or handed to filepath.IsLocal; and any HasPrefix/CutPrefix
//     against a literal beginning "..";
//   - prefix-slash: strings.HasPrefix, CutPrefix or TrimPrefix against
//     y+"/" or y+string(filepath.Separator) (directly, or through a
//     variable of the function that holds one), or against a literal
//     absolute directory with its trailing slash ("/proc/");
//   - index-slash: p[len(root)] == '/', and rest[0] == '/' of a rest
//     that strings.CutPrefix or TrimPrefix gave;
//   - git-name: a comparison or case with ".git", strings.EqualFold with
//     it, and a HasPrefix/HasSuffix/Contains/Index against ".git/",
//     "/.git" or "/.git/".
func findAdHoc(file string, src []byte) ([]adHoc, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []adHoc
	text := func(n ast.Node) string {
		s := string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
		if len(s) > 120 {
			s = s[:120] + "…"
		}
		return strings.Join(strings.Fields(s), " ")
	}
	add := func(fn, rule string, n ast.Node) {
		out = append(out, adHoc{file: file, fn: fn, rule: rule, line: fset.Position(n.Pos()).Line, text: text(n)})
	}
	for _, d := range f.Decls {
		var body ast.Node
		fn := ""
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				continue
			}
			body, fn = d.Body, d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				fn = recvName(d.Recv.List[0].Type) + "." + fn
			}
		case *ast.GenDecl:
			body, fn = d, "(package level)"
		default:
			continue
		}
		// The names the function gives a filepath.Rel result, and a
		// directory with its separator appended.
		rels, slashed, cut := map[string]bool{}, map[string]bool{}, map[string]bool{}
		ast.Inspect(body, func(n ast.Node) bool {
			a, ok := n.(*ast.AssignStmt)
			if !ok || len(a.Rhs) != 1 || len(a.Lhs) == 0 {
				return true
			}
			id, ok := a.Lhs[0].(*ast.Ident)
			if !ok {
				return true
			}
			if isCall(a.Rhs[0], "filepath", "Rel") {
				rels[id.Name] = true
			}
			if isCall(a.Rhs[0], "strings", "CutPrefix", "TrimPrefix") {
				cut[id.Name] = true
			}
			if len(a.Lhs) == 1 && isSlashed(a.Rhs[0]) {
				slashed[id.Name] = true
			}
			return true
		})
		fromRel := func(e ast.Expr) bool {
			for {
				switch x := e.(type) {
				case *ast.ParenExpr:
					e = x.X
				case *ast.SliceExpr:
					e = x.X
				case *ast.Ident:
					return rels[x.Name]
				default:
					return false
				}
			}
		}
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op != token.EQL && n.Op != token.NEQ {
					return true
				}
				for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
					lit, ok := stringLit(pair[1])
					switch {
					case ok && strings.HasPrefix(lit, "..") && fromRel(pair[0]):
						add(fn, "rel-dotdot", n)
					case ok && lit == ".git":
						add(fn, "git-name", n)
					case isCharSlash(pair[1]) && isIndexByLen(pair[0]):
						add(fn, "index-slash", n)
					case isCharSlash(pair[1]) && isFirstOf(pair[0], cut):
						add(fn, "index-slash", n)
					default:
						continue
					}
					break
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if lit, ok := stringLit(e); ok && lit == ".git" {
						add(fn, "git-name", e)
					}
				}
			case *ast.CallExpr:
				switch {
				case isCall(n, "filepath", "IsLocal") && len(n.Args) == 1 && fromRel(n.Args[0]):
					add(fn, "rel-dotdot", n)
				case isCall(n, "strings", "EqualFold") && len(n.Args) == 2 && (isLit(n.Args[0], ".git") || isLit(n.Args[1], ".git")):
					add(fn, "git-name", n)
				case isCall(n, "strings", "HasPrefix", "CutPrefix", "TrimPrefix") && len(n.Args) == 2:
					arg := n.Args[1]
					lit, isLiteral := stringLit(leftmost(arg))
					switch {
					case isLiteral && strings.HasPrefix(lit, "..") && !isCall(n, "strings", "TrimPrefix"):
						add(fn, "rel-dotdot", n)
					case isSlashed(arg) || isIdent(arg, slashed):
						add(fn, "prefix-slash", n)
					case isLiteral && len(lit) > 1 && lit[0] == '/' && strings.HasSuffix(lit, "/") && leftmost(arg) == arg:
						add(fn, "prefix-slash", n)
					case isLiteral && gitLiteral(lit) && leftmost(arg) == arg:
						add(fn, "git-name", n)
					}
				case isCall(n, "strings", "HasSuffix", "Contains", "Index") && len(n.Args) == 2:
					if lit, ok := stringLit(n.Args[1]); ok && gitLiteral(lit) {
						add(fn, "git-name", n)
					}
				}
			}
			return true
		})
	}
	return out, nil
}

func gitLiteral(s string) bool { return slices.Contains([]string{".git/", "/.git", "/.git/"}, s) }

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// isCall reports whether e calls pkg.name for one of names.
func isCall(e ast.Expr, pkg string, names ...string) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && slices.Contains(names, sel.Sel.Name)
}

func stringLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

func isLit(e ast.Expr, s string) bool {
	v, ok := stringLit(e)
	return ok && v == s
}

func isIdent(e ast.Expr, names map[string]bool) bool {
	id, ok := e.(*ast.Ident)
	return ok && names[id.Name]
}

// leftmost is the first operand of a chain of + (e itself otherwise).
func leftmost(e ast.Expr) ast.Expr {
	for {
		b, ok := e.(*ast.BinaryExpr)
		if !ok || b.Op != token.ADD {
			return e
		}
		e = b.X
	}
}

// isSlashed reports whether e is y + "/" or y + string(filepath.Separator)
// (or os.PathSeparator), y anything but a literal.
func isSlashed(e ast.Expr) bool {
	b, ok := e.(*ast.BinaryExpr)
	if !ok || b.Op != token.ADD {
		return false
	}
	if _, lit := b.X.(*ast.BasicLit); lit {
		return false
	}
	if isLit(b.Y, "/") {
		return true
	}
	c, ok := b.Y.(*ast.CallExpr)
	if !ok || len(c.Args) != 1 {
		return false
	}
	if id, ok := c.Fun.(*ast.Ident); !ok || id.Name != "string" {
		return false
	}
	sel, ok := c.Args[0].(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "Separator" || sel.Sel.Name == "PathSeparator")
}

func isCharSlash(e ast.Expr) bool {
	b, ok := e.(*ast.BasicLit)
	return ok && b.Kind == token.CHAR && b.Value == "'/'"
}

// isFirstOf reports whether e is x[0], x one of names.
func isFirstOf(e ast.Expr, names map[string]bool) bool {
	ix, ok := e.(*ast.IndexExpr)
	if !ok || !isIdent(ix.X, names) {
		return false
	}
	b, ok := ix.Index.(*ast.BasicLit)
	return ok && b.Kind == token.INT && b.Value == "0"
}

// isIndexByLen reports whether e is x[len(y)].
func isIndexByLen(e ast.Expr) bool {
	ix, ok := e.(*ast.IndexExpr)
	if !ok {
		return false
	}
	c, ok := ix.Index.(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := c.Fun.(*ast.Ident)
	return ok && id.Name == "len"
}
