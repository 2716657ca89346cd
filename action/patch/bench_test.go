package patch

import "testing"

// benchPatch is a realistic three-file git diff: a change in two hunks, a rename with an edit
// and a new file.
var benchPatch = lines(
	"diff --git a/internal/server/handler.go b/internal/server/handler.go",
	"index 3b18e51..a9c2f0d 100644",
	"--- a/internal/server/handler.go",
	"+++ b/internal/server/handler.go",
	"@@ -12,13 +12,14 @@ import (",
	" \t\"net/http\"",
	" \t\"time\"",
	" )",
	" ",
	"-// Handler serves the API.",
	"+// Handler serves the API. It is safe for concurrent use.",
	" type Handler struct {",
	" \tstore  Store",
	" \tclock  func() time.Time",
	"+\tlimit  int",
	" }",
	" ",
	" func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {",
	"-\tif r.Method != http.MethodGet {",
	"+\tif r.Method != http.MethodGet && r.Method != http.MethodHead {",
	" \t\thttp.Error(w, \"method not allowed\", http.StatusMethodNotAllowed)",
	"@@ -48,7 +49,7 @@ func (h *Handler) list(w http.ResponseWriter, r *http.Request) {",
	" \titems, err := h.store.List(r.Context())",
	" \tif err != nil {",
	" \t\th.fail(w, err)",
	"-\t\treturn",
	"+\t\treturn // already logged",
	" \t}",
	" \twriteJSON(w, items)",
	" }",
	"diff --git a/docs/old name.md b/docs/new name.md",
	"similarity index 91%",
	"rename from docs/old name.md",
	"rename to docs/new name.md",
	"index 77d1e0c..0c6f1a2 100644",
	"--- a/docs/old name.md\t",
	"+++ b/docs/new name.md\t",
	"@@ -1,5 +1,5 @@",
	"-# Old name",
	"+# New name",
	" ",
	" This page explains the server's configuration.",
	" Each option has a default that suits a laptop.",
	" See the reference for the full list.",
	"diff --git a/internal/server/limit.go b/internal/server/limit.go",
	"new file mode 100644",
	"index 0000000..5e0f3c1",
	"--- /dev/null",
	"+++ b/internal/server/limit.go",
	"@@ -0,0 +1,9 @@",
	"+package server",
	"+",
	"+// limit caps the number of items in one response.",
	"+func limit(n, max int) int {",
	"+\tif n <= 0 || n > max {",
	"+\t\treturn max",
	"+\t}",
	"+\treturn n",
	"+}",
)

func BenchmarkChanges(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchPatch)))
	for b.Loop() {
		if _, err := Changes(benchPatch); err != nil {
			b.Fatal(err)
		}
	}
}
