// Package warden_test holds repository-wide checks: every package has a doc comment and every
// exported name a doc comment (as Tailscale keeps), so the documentation cannot quietly rot.
package warden_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestDocComments(t *testing.T) {
	fset := token.NewFileSet()
	files := map[string][]*ast.File{} // by directory
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files[filepath.Dir(path)] = append(files[filepath.Dir(path)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir, fs := range files {
		name := fs[0].Name.Name
		hasDoc := false
		for _, f := range fs {
			doc := ""
			if f.Doc != nil {
				doc = f.Doc.Text()
			}
			if strings.HasPrefix(doc, "Package "+name+" ") || name == "main" && strings.HasPrefix(doc, "Command ") {
				hasDoc = true
			}
			checkExported(t, fset, f)
		}
		if !hasDoc {
			t.Errorf("package %s (%s) has no doc comment starting \"Package %s\"", name, dir, name)
		}
	}
}

func checkExported(t *testing.T, fset *token.FileSet, f *ast.File) {
	t.Helper()
	undocumented := func(pos token.Pos, what string) {
		t.Errorf("%s: exported %s has no doc comment", fset.Position(pos), what)
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv != nil && !exportedRecv(d.Recv) {
				continue
			}
			if d.Recv != nil && isInterfaceMethod(d.Name.Name) {
				continue
			}
			undocumented(d.Pos(), d.Name.Name)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && d.Doc == nil && s.Doc == nil {
						undocumented(s.Pos(), s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && d.Doc == nil && s.Doc == nil && s.Comment == nil {
							undocumented(n.Pos(), n.Name)
						}
					}
				}
			}
		}
	}
}

// isInterfaceMethod names the methods whose meaning the standard interfaces document.
func isInterfaceMethod(name string) bool {
	switch name {
	case "Error", "String", "Unwrap", "Is", "MarshalText", "UnmarshalText", "MarshalJSON", "UnmarshalJSON", "Len":
		return true
	}
	return false
}

func exportedRecv(fl *ast.FieldList) bool {
	if len(fl.List) == 0 {
		return false
	}
	typ := fl.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}
