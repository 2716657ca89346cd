package patch

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lines joins the lines of a patch, each ended by a newline, so that the tabs and trailing
// spaces of the samples stay visible.
func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }

// changeTests are patches that parse. The samples marked "genuine" are the output of GNU diff
// 3.8 and git 2.39, pasted as they were written.
var changeTests = []struct {
	name string
	give string
	want []Change
}{
	{
		name: "diff -u, genuine",
		give: lines(
			"--- a/src/util.c\t2026-11-30 09:15:02.123456789 +0000",
			"+++ b/src/util.c\t2026-11-30 10:00:41.987654321 +0000",
			"@@ -2,3 +2,8 @@",
			" {",
			" \treturn a + b;",
			" }",
			"+",
			"+int sub(int a, int b)",
			"+{",
			"+\treturn a - b;",
			"+}",
		),
		want: []Change{{Op: Modify, Old: "src/util.c", New: "src/util.c", Line: 1}},
	},
	{
		name: "diff -ruN, genuine: epoch timestamps mark the new and the deleted file",
		give: lines(
			"diff -ruN a/LEGACY b/LEGACY",
			"--- a/LEGACY\t2026-11-30 09:15:02.123456789 +0000",
			"+++ b/LEGACY\t1970-01-01 00:00:00.000000000 +0000",
			"@@ -1 +0,0 @@",
			"-legacy",
			"diff -ruN a/README b/README",
			"--- a/README\t1970-01-01 00:00:00.000000000 +0000",
			"+++ b/README\t2026-11-30 10:00:41.987654321 +0000",
			"@@ -0,0 +1 @@",
			"+Read me.",
			`diff -ruN "a/doc file.txt" "b/doc file.txt"`,
			"--- \"a/doc file.txt\"\t2026-11-30 09:15:02.123456789 +0000",
			"+++ \"b/doc file.txt\"\t2026-11-30 10:00:41.987654321 +0000",
			"@@ -1,2 +1,2 @@",
			" one",
			"-two",
			`\ No newline at end of file`,
			"+2",
			`\ No newline at end of file`,
			"Binary files a/image.bin and b/image.bin differ",
			"diff -ruN a/src/util.c b/src/util.c",
			"--- a/src/util.c\t2026-11-30 09:15:02.123456789 +0000",
			"+++ b/src/util.c\t2026-11-30 10:00:41.987654321 +0000",
			"@@ -2,3 +2,8 @@",
			" {",
			" \treturn a + b;",
			" }",
			"+",
			"+int sub(int a, int b)",
			"+{",
			"+\treturn a - b;",
			"+}",
		),
		want: []Change{
			{Op: Delete, Old: "LEGACY", Line: 2},
			{Op: Create, New: "README", Line: 7},
			{Op: Modify, Old: "doc file.txt", New: "doc file.txt", Line: 12},
			{Op: Modify, Old: "image.bin", New: "image.bin", Line: 20, Binary: true},
			{Op: Modify, Old: "src/util.c", New: "src/util.c", Line: 22},
		},
	},
	{
		name: "git diff, genuine: modify, new, deleted, empty new file, binary, mode change",
		give: lines(
			"diff --git a/.keep b/.keep",
			"new file mode 100644",
			"index 0000000..e69de29",
			"diff --git a/cmd/app/main.go b/cmd/app/main.go",
			"index d8fa929..635db7a 100644",
			"--- a/cmd/app/main.go",
			"+++ b/cmd/app/main.go",
			"@@ -3,5 +3,5 @@ package main",
			` import "fmt"`,
			" ",
			" func main() {",
			"-\tfmt.Println(\"hello\")",
			"+\tfmt.Println(\"hello, world\")",
			" }",
			"diff --git a/docs/notes.md b/docs/notes.md",
			"new file mode 100644",
			"index 0000000..c9e092c",
			"--- /dev/null",
			"+++ b/docs/notes.md",
			"@@ -0,0 +1,3 @@",
			"+# Notes",
			"+",
			"+First draft.",
			"diff --git a/logo.png b/logo.png",
			"index 029ace0..05964a5 100644",
			"Binary files a/logo.png and b/logo.png differ",
			"diff --git a/old.txt b/old.txt",
			"deleted file mode 100644",
			"index 6e263ab..0000000",
			"--- a/old.txt",
			"+++ /dev/null",
			"@@ -1 +0,0 @@",
			"-obsolete",
			"diff --git a/run.sh b/run.sh",
			"old mode 100644",
			"new mode 100755",
		),
		want: []Change{
			{Op: Create, New: ".keep", Line: 1, Mode: "100644"},
			{Op: Modify, Old: "cmd/app/main.go", New: "cmd/app/main.go", Line: 4},
			{Op: Create, New: "docs/notes.md", Line: 15, Mode: "100644"},
			{Op: Modify, Old: "logo.png", New: "logo.png", Line: 24, Binary: true},
			{Op: Delete, Old: "old.txt", Line: 27},
			{Op: Modify, Old: "run.sh", New: "run.sh", Line: 34, ModeOnly: true, Mode: "100755"},
		},
	},
	{
		name: "git diff -M -C, genuine: rename with spaces and an edit, copy",
		give: lines(
			"diff --git a/release notes.txt b/RELEASE NOTES.txt",
			"similarity index 86%",
			"rename from release notes.txt",
			"rename to RELEASE NOTES.txt",
			"index 624b469..63d32ef 100644",
			"--- a/release notes.txt\t",
			"+++ b/RELEASE NOTES.txt\t",
			"@@ -9,4 +9,4 @@ line 8",
			" line 9",
			" line 10",
			" line 11",
			"-line 12",
			"+line twelve",
			"diff --git a/config.yaml b/config.example.yaml",
			"similarity index 100%",
			"copy from config.yaml",
			"copy to config.example.yaml",
		),
		want: []Change{
			{Op: Rename, Old: "release notes.txt", New: "RELEASE NOTES.txt", Line: 1},
			{Op: Copy, Old: "config.yaml", New: "config.example.yaml", Line: 14},
		},
	},
	{
		name: "git format-patch, genuine: mail headers, diffstat and signature are skipped",
		give: lines(
			"From 958cd881ba106a3f5853da7c7d92cb92076d2344 Mon Sep 17 00:00:00 2001",
			"From: Dev Eloper <dev@example.com>",
			"Date: Mon, 30 Nov 2026 10:28:54 +0000",
			"Subject: [PATCH] Rename release notes; add example config",
			"",
			"The example config starts as a copy of the real one.",
			"---",
			" release notes.txt => RELEASE NOTES.txt | 2 +-",
			" config.yaml => config.example.yaml     | 0",
			" 2 files changed, 1 insertion(+), 1 deletion(-)",
			" rename release notes.txt => RELEASE NOTES.txt (86%)",
			" copy config.yaml => config.example.yaml (100%)",
			"",
			"diff --git a/release notes.txt b/RELEASE NOTES.txt",
			"similarity index 86%",
			"rename from release notes.txt",
			"rename to RELEASE NOTES.txt",
			"index 624b469..63d32ef 100644",
			"--- a/release notes.txt\t",
			"+++ b/RELEASE NOTES.txt\t",
			"@@ -9,4 +9,4 @@ line 8",
			" line 9",
			" line 10",
			" line 11",
			"-line 12",
			"+line twelve",
			"diff --git a/config.yaml b/config.example.yaml",
			"similarity index 100%",
			"copy from config.yaml",
			"copy to config.example.yaml",
			"-- ",
			"2.39.5",
			"",
		),
		want: []Change{
			{Op: Rename, Old: "release notes.txt", New: "RELEASE NOTES.txt", Line: 14},
			{Op: Copy, Old: "config.yaml", New: "config.example.yaml", Line: 27},
		},
	},
	{
		name: "git diff --binary, genuine: delta and literal hunks",
		give: lines(
			"diff --git a/blob.bin b/blob.bin",
			"index 2501c44f817d55f68b9579c6626ab543093942c8..dc882b09bf9b766be4448dbfdc5e692074865740 100644",
			"GIT binary patch",
			"delta 14",
			"VcmdlfzEga|9ag3!hK-E3Sph1b1t<Uj",
			"",
			"delta 16",
			"YcmdlfzEga|9oCHkXILi+2rx1L06E$Pb^rhX",
			"",
			"diff --git a/icon.ico b/icon.ico",
			"new file mode 100644",
			"index 0000000000000000000000000000000000000000..8352675d67aed6625ece79af41c27fdb4ee2e867",
			"GIT binary patch",
			"literal 3",
			"KcmZQzWC8#H2LJ>B",
			"",
			"literal 0",
			"HcmV?d00001",
			"",
		),
		want: []Change{
			{Op: Modify, Old: "blob.bin", New: "blob.bin", Line: 1, Binary: true},
			{Op: Create, New: "icon.ico", Line: 10, Binary: true, Mode: "100644"},
		},
	},
	{
		name: "git diff --binary, genuine: literal forward and reverse hunks",
		give: lines(
			"diff --git a/logo.png b/logo.png",
			"index 029ace0fcbb58feb758971feed0457fd34dbb60b..05964a5252b05b1516ee01ca49214a122c495324 100644",
			"GIT binary patch",
			"literal 17",
			"YcmeAS@N?(olHy`uVBq!ia0y}r03D42-v9sr",
			"",
			"literal 16",
			"XcmeAS@N?(olHy`uVBq!ia0vnc8m<D~",
			"",
		),
		want: []Change{{Op: Modify, Old: "logo.png", New: "logo.png", Line: 1, Binary: true}},
	},
	{
		name: "git diff --no-prefix, genuine: paths kept whole",
		give: lines(
			"diff --git cmd/app/main.go cmd/app/app.go",
			"similarity index 100%",
			"rename from cmd/app/main.go",
			"rename to cmd/app/app.go",
			"diff --git config.yaml config.yaml",
			"index aad3e99..6db019e 100644",
			"--- config.yaml",
			"+++ config.yaml",
			"@@ -8,3 +8,4 @@ cfg 7",
			" cfg 8",
			" cfg 9",
			" cfg 10",
			"+cfg 0",
		),
		want: []Change{
			{Op: Rename, Old: "cmd/app/main.go", New: "cmd/app/app.go", Line: 1},
			{Op: Modify, Old: "config.yaml", New: "config.yaml", Line: 5},
		},
	},
	{
		name: "git diff, genuine: quoted paths with octal and C escapes",
		give: lines(
			`diff --git "a/back\\slash.txt" "b/back\\slash.txt"`,
			"index 64b315f..829bc61 100644",
			`--- "a/back\\slash.txt"`,
			`+++ "b/back\\slash.txt"`,
			"@@ -1 +1 @@",
			"-bs",
			"+bs2",
			`diff --git "a/quo\"te.txt" "b/quo\"te.txt"`,
			"index bca70f3..d169a2f 100644",
			`--- "a/quo\"te.txt"`,
			`+++ "b/quo\"te.txt"`,
			"@@ -1 +1 @@",
			"-q",
			"+q2",
			`diff --git "a/ta\tb.txt" "b/ta\tb.txt"`,
			"index 718f4d2..9bc7ad0 100644",
			`--- "a/ta\tb.txt"`,
			`+++ "b/ta\tb.txt"`,
			"@@ -1 +1 @@",
			"-t",
			"+t2",
			`diff --git "a/\303\251t\303\251.txt" "b/\303\251t\303\251.txt"`,
			"index d905d9d..6a69f92 100644",
			`--- "a/\303\251t\303\251.txt"`,
			`+++ "b/\303\251t\303\251.txt"`,
			"@@ -1 +1 @@",
			"-e",
			"+f",
		),
		want: []Change{
			{Op: Modify, Old: `back\slash.txt`, New: `back\slash.txt`, Line: 1},
			{Op: Modify, Old: `quo"te.txt`, New: `quo"te.txt`, Line: 8},
			{Op: Modify, Old: "ta\tb.txt", New: "ta\tb.txt", Line: 15},
			{Op: Modify, Old: "été.txt", New: "été.txt", Line: 22},
		},
	},
	{
		name: "git diff -M -C, genuine: quoted and unquoted paths mixed on one line",
		give: lines(
			`diff --git "a/\303\251t\303\251.txt" "b/c\\opy.txt"`,
			"similarity index 100%",
			`copy from "\303\251t\303\251.txt"`,
			`copy to "c\\opy.txt"`,
			`diff --git "a/q\"uote.txt" b/ren amed.txt`,
			"similarity index 100%",
			`rename from "q\"uote.txt"`,
			"rename to ren amed.txt",
			`diff --git a/sp ace.txt "b/\303\251t\303\2512.txt"`,
			"similarity index 100%",
			"rename from sp ace.txt",
			`rename to "\303\251t\303\2512.txt"`,
		),
		want: []Change{
			{Op: Copy, Old: "été.txt", New: `c\opy.txt`, Line: 1},
			{Op: Rename, Old: `q"uote.txt`, New: "ren amed.txt", Line: 5},
			{Op: Rename, Old: "sp ace.txt", New: "été2.txt", Line: 9},
		},
	},
	{
		name: "git diff, genuine: a new symbolic link",
		give: lines(
			"diff --git a/link b/link",
			"new file mode 120000",
			"index 0000000..4cbb553",
			"--- /dev/null",
			"+++ b/link",
			"@@ -0,0 +1 @@",
			"+target.txt",
			`\ No newline at end of file`,
		),
		want: []Change{{Op: Create, New: "link", Line: 1, Mode: "120000"}},
	},
	{
		name: "timestamp after spaces",
		give: lines(
			"--- a.txt  2026-11-30 10:00:00.000000000 +0000",
			"+++ a.txt  2026-11-30 10:05:00.000000000 +0000",
			"@@ -1 +1 @@",
			"-old",
			"+new",
		),
		want: []Change{{Op: Modify, Old: "a.txt", New: "a.txt", Line: 1}},
	},
	{
		name: "hg diff: ctime timestamps after a tab",
		give: lines(
			"diff -r 1a2b3c4d5e6f -r 6f5e4d3c2b1a hello.c",
			"--- a/hello.c\tThu Nov 26 10:00:00 2026 +0000",
			"+++ b/hello.c\tMon Nov 30 10:00:00 2026 +0000",
			"@@ -1,2 +1,2 @@",
			" #include <stdio.h>",
			"-int x;",
			"+int y;",
		),
		want: []Change{{Op: Modify, Old: "hello.c", New: "hello.c", Line: 2}},
	},
	{
		name: "svn diff: the last Index line names the file of the next section",
		give: lines(
			"Index: trunk/logo.png",
			"===================================================================",
			"Cannot display: file marked as a binary type.",
			"svn:mime-type = image/png",
			"Index: trunk/main.c",
			"===================================================================",
			"--- trunk/main.c\t(revision 41)",
			"+++ trunk/main.c\t(working copy)",
			"@@ -1 +1 @@",
			"-a",
			"+b",
		),
		want: []Change{{Op: Modify, Old: "trunk/main.c", New: "trunk/main.c", Line: 7}},
	},
	{
		name: "prefixes kept unless a/ on the old side and b/ on the new",
		give: lines(
			"--- main.c",
			"+++ main.c",
			"@@ -1 +1 @@",
			"-a",
			"+b",
			"--- a/util.c",
			"+++ util.c",
			"@@ -1 +1 @@",
			"-a",
			"+b",
			"--- b/x",
			"+++ a/x",
			"@@ -1 +1 @@",
			"-a",
			"+b",
		),
		want: []Change{
			{Op: Modify, Old: "main.c", New: "main.c", Line: 1},
			{Op: Modify, Old: "a/util.c", New: "util.c", Line: 6},
			{Op: Modify, Old: "b/x", New: "a/x", Line: 11},
		},
	},
	{
		name: "old and new paths differ",
		give: lines(
			"--- main.c.orig\t2026-11-30 10:00:00.000000000 +0000",
			"+++ main.c\t2026-11-30 10:01:00.000000000 +0000",
			"@@ -1 +1 @@",
			"-a",
			"+b",
		),
		want: []Change{{Op: Modify, Old: "main.c.orig", New: "main.c", Line: 1}},
	},
	{
		name: "/dev/null sides in a plain diff",
		give: lines(
			"--- /dev/null",
			"+++ b/new.txt",
			"@@ -0,0 +1 @@",
			"+new",
			"--- gone.txt",
			"+++ /dev/null",
			"@@ -1,2 +0,0 @@",
			"-one",
			"-two",
		),
		want: []Change{
			{Op: Create, New: "new.txt", Line: 1},
			{Op: Delete, Old: "gone.txt", Line: 5},
		},
	},
	{
		name: "epoch in another time zone; an epoch timestamp on a kept file",
		give: lines(
			"--- a/new.txt\t1969-12-31 16:00:00.000000000 -0800",
			"+++ b/new.txt\t2026-11-30 10:00:00.000000000 -0800",
			"@@ -0,0 +1 @@",
			"+new",
			"--- a/old.txt\t1970-01-01 00:00:00.000000000 +0000",
			"+++ b/old.txt\t2026-11-30 10:00:00.000000000 +0000",
			"@@ -1 +1 @@",
			"-a",
			"+b",
		),
		want: []Change{
			{Op: Create, New: "new.txt", Line: 1},
			{Op: Modify, Old: "old.txt", New: "old.txt", Line: 5},
		},
	},
	{
		name: "several hunks, empty context lines, no newline in the middle",
		give: lines(
			"Some commit message.",
			"",
			"Index: f.txt",
			"diff -u a/f.txt b/f.txt",
			"--- a/f.txt",
			"+++ b/f.txt",
			"@@ -1,3 +1,3 @@",
			" one",
			"",
			"-three",
			"+3",
			"@@ -10 +10 @@ func ten() {",
			"-ten",
			`\ No newline at end of file`,
			"+10",
			`\ Kein Zeilenumbruch am Dateiende.`,
		),
		want: []Change{{Op: Modify, Old: "f.txt", New: "f.txt", Line: 5}},
	},
	{
		name: "CRLF line ends",
		give: "diff --git a/w.txt b/w.txt\r\nindex 1234567..89abcde 100644\r\n--- a/w.txt\r\n+++ b/w.txt\r\n" +
			"@@ -1 +1 @@\r\n-a\r\n+b\r\n\r\n",
		want: []Change{{Op: Modify, Old: "w.txt", New: "w.txt", Line: 1}},
	},
	{
		name: "no final newline",
		give: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b",
		want: []Change{{Op: Modify, Old: "x", New: "x", Line: 1}},
	},
	{
		name: "diff --git line with spaces, mode change only",
		give: lines(
			"diff --git a/my file b/my file",
			"old mode 100644",
			"new mode 100755",
		),
		want: []Change{{Op: Modify, Old: "my file", New: "my file", Line: 1, ModeOnly: true, Mode: "100755"}},
	},
	{
		name: "diff --git line with \" b/\" inside the path",
		give: lines(
			"diff --git a/x b/y b/x b/y",
			"new file mode 100644",
			"index 0000000..e69de29",
		),
		want: []Change{{Op: Create, New: "x b/y", Line: 1, Mode: "100644"}},
	},
	{
		name: "ambiguous diff --git line read through the rename lines",
		give: lines(
			"diff --git a/a b c b/d e f",
			"similarity index 100%",
			"rename from a b c",
			"rename to d e f",
		),
		want: []Change{{Op: Rename, Old: "a b c", New: "d e f", Line: 1}},
	},
	{
		name: "old git rename headers, rename with a mode change",
		give: lines(
			"diff --git a/x b/y",
			"rename old x",
			"rename new y",
			"diff --git a/run b/bin/run",
			"old mode 100644",
			"new mode 100755",
			"similarity index 100%",
			"rename from run",
			"rename to bin/run",
		),
		want: []Change{
			{Op: Rename, Old: "x", New: "y", Line: 1},
			{Op: Rename, Old: "run", New: "bin/run", Line: 4, Mode: "100755"},
		},
	},
	{
		name: "dissimilarity index, deleted empty file, git and plain sections together",
		give: lines(
			"diff --git a/w.txt b/w.txt",
			"dissimilarity index 93%",
			"index e8823e1..cc1ab30 100644",
			"--- a/w.txt",
			"+++ b/w.txt",
			"@@ -1,3 +1,2 @@",
			"-1",
			"-2",
			"-3",
			"+totally",
			"+different",
			"diff --git a/empty b/empty",
			"deleted file mode 100644",
			"index e69de29..0000000",
			"diff -u a/plain.txt b/plain.txt",
			"--- a/plain.txt",
			"+++ b/plain.txt",
			"@@ -1 +1 @@",
			"-a",
			"+b",
		),
		want: []Change{
			{Op: Modify, Old: "w.txt", New: "w.txt", Line: 1},
			{Op: Delete, Old: "empty", Line: 12},
			{Op: Modify, Old: "plain.txt", New: "plain.txt", Line: 16},
		},
	},
	{
		name: "Binary files lines, as GNU diff and git write them",
		give: lines(
			"Binary files a/my img.png and b/my img.png differ",
			`Binary files "a/t\tab.png" and "b/t\tab.png" differ`,
			`Binary files a/x.bin and "b/\303\251.bin" differ`,
			"Binary files a/gone.bin and /dev/null differ",
		),
		want: []Change{
			{Op: Modify, Old: "my img.png", New: "my img.png", Line: 1, Binary: true},
			{Op: Modify, Old: "t\tab.png", New: "t\tab.png", Line: 2, Binary: true},
			{Op: Modify, Old: "x.bin", New: "é.bin", Line: 3, Binary: true},
			{Op: Delete, Old: "gone.bin", Line: 4, Binary: true},
		},
	},
	{
		name: "every C escape git writes",
		give: lines(
			`diff --git "a/\a\b\f\n\r\t\v\\\"\001\177x" "b/\a\b\f\n\r\t\v\\\"\001\177x"`,
			"old mode 100644",
			"new mode 100755",
		),
		want: []Change{{Op: Modify, Old: "\a\b\f\n\r\t\v\\\"\x01\x7fx", New: "\a\b\f\n\r\t\v\\\"\x01\x7fx", Line: 1, ModeOnly: true, Mode: "100755"}},
	},
	{
		name: "absolute and dot-dot paths kept for the caller to resolve",
		give: lines(
			"--- /etc/hosts",
			"+++ /etc/hosts",
			"@@ -1 +1 @@",
			"-a",
			"+b",
			"--- a/../up.txt",
			"+++ b/../up.txt",
			"@@ -1 +1 @@",
			"-a",
			"+b",
		),
		want: []Change{
			{Op: Modify, Old: "/etc/hosts", New: "/etc/hosts", Line: 1},
			{Op: Modify, Old: "../up.txt", New: "../up.txt", Line: 6},
		},
	},
}

func TestChanges(t *testing.T) {
	for _, tt := range changeTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Changes(tt.give)
			if err != nil {
				t.Fatalf("Changes() error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Changes() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// errorTests are patches that must be refused, with the line of the error and a part of its
// message.
var errorTests = []struct {
	name string
	give string
	line int
	msg  string
}{
	{name: "empty", give: "", line: 0, msg: "empty patch"},
	{name: "blank", give: " \n\t\n\n", line: 0, msg: "empty patch"},
	{name: "prose", give: "Just some text,\nno diff.\n", line: 0, msg: "no file section"},
	{name: "hunk before any header", give: lines("@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "hunk outside"},
	{name: "--- without +++", give: lines("--- a/x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "without a +++"},
	{name: "+++ without ---", give: lines("+++ b/x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "without a ---"},
	{name: "headers the wrong way round", give: lines("+++ b/x", "--- a/x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "without a ---"},
	{name: "header without a hunk", give: lines("--- a/x", "+++ b/x"), line: 2, msg: "without a hunk"},
	{name: "text between header and hunk", give: lines("--- a/x", "+++ b/x", "hello", "@@ -1 +1 @@", "-a", "+b"), line: 2, msg: "without a hunk"},
	{name: "hunk cut short", give: lines("--- a/x", "+++ b/x", "@@ -1,3 +1,3 @@", " a", "-b"), line: 3, msg: "hunk ends early: 1 old and 2 new"},
	{name: "garbage inside a hunk", give: lines("--- a/x", "+++ b/x", "@@ -1,2 +1,2 @@", " a", "xyz", " b"), line: 5, msg: "hunk ends early"},
	{name: "more removed lines than counted", give: lines("--- a/x", "+++ b/x", "@@ -1 +1 @@", "-a", "-b", "+c"), line: 5, msg: "more removed"},
	{name: "more added lines than counted", give: lines("--- a/x", "+++ b/x", "@@ -1 +1 @@", "-a", "+b", "+c"), line: 6, msg: "more lines in hunk"},
	{name: "hunk header without its end", give: lines("--- a/x", "+++ b/x", "@@ -1 +1", "-a", "+b"), line: 3, msg: "malformed hunk header"},
	{name: "hunk header without new range", give: lines("--- a/x", "+++ b/x", "@@ -1 @@", "-a"), line: 3, msg: "malformed hunk header"},
	{name: "hunk header with letters", give: lines("--- a/x", "+++ b/x", "@@ -a,b +c,d @@", "-a", "+b"), line: 3, msg: "malformed hunk header"},
	{name: "hunk count too large", give: lines("--- a/x", "+++ b/x", "@@ -1,9999999999 +1 @@", "-a", "+b"), line: 3, msg: "malformed hunk header"},
	{name: "empty hunk", give: lines("--- a/x", "+++ b/x", "@@ -0,0 +0,0 @@"), line: 3, msg: "empty hunk"},
	{name: "no-newline line first in a hunk", give: lines("--- a/x", "+++ b/x", "@@ -1 +1 @@", `\ No newline at end of file`, "-a", "+b"), line: 4, msg: "misplaced"},
	{name: "a later hunk cut short", give: lines("--- a/x", "+++ b/x", "@@ -1 +1 @@", "-a", "+b", "@@ -5 +5 @@", "-c"), line: 6, msg: "hunk ends early"},
	{name: "both sides /dev/null", give: lines("--- /dev/null", "+++ /dev/null", "@@ -0,0 +1 @@", "+a"), line: 1, msg: "both paths are /dev/null"},
	{name: "new file with old lines", give: lines("--- /dev/null", "+++ b/x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "removes lines"},
	{name: "deleted file with new lines", give: lines("--- a/x", "+++ /dev/null", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "adds lines"},
	{name: "spaces in a path without a tab", give: lines("--- my file.txt", "+++ my file.txt", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "spaces"},
	{name: "tabs before the timestamp", give: lines("--- a/x", "+++ b/x\tcopy\t2026-11-30 10:00:00 +0000", "@@ -1 +1 @@", "-a", "+b"), line: 2, msg: "two ways"},
	{name: "space before the path", give: lines("---  x\t2026-11-30 10:00:00 +0000", "+++ x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "space"},
	{name: "epoch without a time zone", give: lines("--- a/x\t1970-01-01 00:00:00", "+++ b/x\t2026-11-30 10:00:00", "@@ -0,0 +1 @@", "+a"), line: 1, msg: "time zone"},
	{name: "new file with two paths", give: lines("--- a/x\t1970-01-01 00:00:00.000000000 +0000", "+++ b/y\t2026-11-30 10:00:00.000000000 +0000", "@@ -0,0 +1 @@", "+a"), line: 1, msg: "two different paths"},
	{name: "nothing after the prefix", give: lines("--- a/", "+++ b/", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "a/ prefix"},
	{name: "slash after the prefix", give: lines("--- a//etc/passwd", "+++ b//etc/passwd", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "a/ prefix"},
	{name: "unterminated quoted path", give: lines(`--- "a/x`, "+++ b/x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "unterminated"},
	{name: "bad escape", give: lines(`--- "a/\q"`, "+++ b/x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "bad escape"},
	{name: "bad octal escape", give: lines("--- a/x", `+++ "b/\38"`, "@@ -1 +1 @@", "-a", "+b"), line: 2, msg: "octal"},
	{name: "escaped NUL", give: lines(`--- "a/\000"`, `+++ "b/\000"`, "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "NUL"},
	{name: "text after a quoted path", give: lines(`--- "a/x"y`, "+++ b/x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "after a quoted"},
	{name: "bare diff --git line", give: lines("diff --git a/secret b/secret", "diff --git a/x b/x", "old mode 100644", "new mode 100755"), line: 1, msg: "without any header"},
	{name: "diff --git with one path", give: lines("diff --git a/x", "old mode 100644", "new mode 100755"), line: 1, msg: "second path"},
	{name: "diff --git with an unterminated quote", give: lines(`diff --git "a/x b/x`, "old mode 100644", "new mode 100755"), line: 1, msg: "unterminated"},
	{name: "diff --git with a quote inside a path", give: lines(`diff --git a/x"y b/x"y`, "old mode 100644", "new mode 100755"), line: 1, msg: "unquoted"},
	{name: "diff --git with an unquoted tab", give: lines("diff --git a/x\ty b/x\ty", "old mode 100644", "new mode 100755"), line: 1, msg: "unquoted"},
	{name: "diff --git with text after the quoted paths", give: lines(`diff --git "a/x" "b/x" c`, "old mode 100644", "new mode 100755"), line: 1, msg: "after a quoted"},
	{name: "diff --git with two files and no rename", give: lines("diff --git a/x b/y", "index 1234567..89abcde 100644", "--- a/x", "+++ b/y", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "do not match"},
	{name: "rename from without rename to", give: lines("diff --git a/x b/y", "similarity index 100%", "rename from x"), line: 1, msg: "without its partner"},
	{name: "rename from another file", give: lines("diff --git a/x b/y", "similarity index 100%", "rename from secret", "rename to y"), line: 1, msg: "do not match"},
	{name: "--- naming another file", give: lines("diff --git a/x b/x", "--- a/secret", "+++ b/x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "do not match"},
	{name: "new file with an old path", give: lines("diff --git a/x b/x", "new file mode 100644", "--- a/x", "+++ b/x", "@@ -0,0 +1 @@", "+a"), line: 1, msg: "new file mode must come together"},
	{name: "/dev/null without new file mode", give: lines("diff --git a/x b/x", "--- /dev/null", "+++ b/x", "@@ -0,0 +1 @@", "+a"), line: 1, msg: "new file mode must come together"},
	{name: "/dev/null without deleted file mode", give: lines("diff --git a/x b/x", "--- a/x", "+++ /dev/null", "@@ -1 +0,0 @@", "-a"), line: 1, msg: "deleted file mode must come together"},
	{name: "plain header after a git section is the section's", give: lines("diff --git a/empty b/empty", "deleted file mode 100644", "--- a/plain.txt", "+++ b/plain.txt", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "deleted file mode must come together"},
	{name: "new and deleted", give: lines("diff --git a/x b/x", "new file mode 100644", "deleted file mode 100644"), line: 1, msg: "both new file and deleted"},
	{name: "rename and copy", give: lines("diff --git a/x b/y", "rename from x", "copy to y"), line: 1, msg: "both rename and copy"},
	{name: "repeated rename header", give: lines("diff --git a/x b/y", "rename from x", "rename from x", "rename to y"), line: 3, msg: "repeated"},
	{name: "renamed new file", give: lines("diff --git a/x b/y", "new file mode 100644", "rename from x", "rename to y"), line: 1, msg: "rename or copy of a new"},
	{name: "old mode without new mode", give: lines("diff --git a/x b/x", "old mode 100644"), line: 1, msg: "must come together"},
	{name: "bad mode", give: lines("diff --git a/x b/x", "old mode 100644", "new mode 10075"), line: 3, msg: "bad file mode"},
	{name: "bad similarity index", give: lines("diff --git a/x b/y", "similarity index 120%", "rename from x", "rename to y"), line: 2, msg: "similarity"},
	{name: "bad index line", give: lines("diff --git a/x b/x", "index xyz", "--- a/x", "+++ b/x", "@@ -1 +1 @@", "-a", "+b"), line: 2, msg: "bad index"},
	{name: "unquoted tab in rename", give: lines("diff --git a/x b/y", "rename from x\tz", "rename to y"), line: 2, msg: "unquoted"},
	{name: "text after a quoted rename path", give: lines("diff --git a/x b/y", `rename from "x"z`, "rename to y"), line: 2, msg: "after a quoted"},
	{name: "binary patch cut short", give: lines("diff --git a/x b/x", "index 1234567..89abcde 100644", "GIT binary patch", "literal 4", "LcmZR`ODzWg0*?Vp"), line: 4, msg: "ends early"},
	{name: "binary patch cut mid-line", give: lines("diff --git a/x b/x", "GIT binary patch", "literal 4", "LcmZR`ODz", ""), line: 4, msg: "wrong length"},
	{name: "binary patch of the wrong size", give: lines("diff --git a/x b/x", "GIT binary patch", "literal 5", "LcmZR`ODzWg0*?Vp", ""), line: 3, msg: "holds 4 bytes"},
	{name: "binary patch without data", give: lines("diff --git a/x b/x", "GIT binary patch", "literal 17", ""), line: 3, msg: "without data"},
	{name: "binary patch with a bad digit", give: lines("diff --git a/x b/x", "GIT binary patch", "literal 4", `LcmZR"ODzWg0*?Vp`, ""), line: 4, msg: "base85"},
	{name: "binary patch with corrupt data", give: lines("diff --git a/x b/x", "GIT binary patch", "literal 4", "LcmZR`ODzWg0*?Vq", ""), line: 3, msg: "corrupt"},
	{name: "binary reverse hunk cut short", give: lines("diff --git a/x b/x", "GIT binary patch", "literal 4", "LcmZR`ODzWg0*?Vp", "", "literal 0", "HcmV?d00001"), line: 6, msg: "ends early"},
	{name: "binary patch hunk of another kind", give: lines("diff --git a/x b/x", "GIT binary patch", "copy 4", "LcmZR`ODzWg0*?Vp", ""), line: 3, msg: "literal"},
	{name: "binary patch outside git", give: lines("GIT binary patch", "literal 0", "HcmV?d00001", ""), line: 1, msg: "outside a diff --git"},
	{name: "context diff", give: lines("*** a/x\t2026-11-30 10:00:00.000000000 +0000", "--- b/x\t2026-11-30 10:01:00.000000000 +0000", "***************", "*** 1 ****", "! a", "--- 1 ----", "! b"), line: 1, msg: "context diff"},
	{name: "normal diff", give: lines("1c1", "< a", "---", "> b"), line: 1, msg: "normal and ed-script"},
	{name: "normal diff after an Index line", give: lines("Index: x", "2,3d1", "< a", "< b"), line: 2, msg: "normal and ed-script"},
	{name: "ed script after an Index line", give: lines("Index: x", "d"), line: 2, msg: "normal and ed-script"},
	{name: "combined diff", give: lines("diff --cc file.c", "index 1234567,89abcde..0123456", "@@@ -1,1 -1,1 +1,1 @@@", "- a", " -b", "++c"), line: 1, msg: "combined"},
	{name: "indented patch", give: lines("  --- a/x", "  +++ b/x", "  @@ -1 +1 @@", "  -a", "  +b"), line: 1, msg: "indented"},
	{name: "indented diff --git", give: lines("diff --git a/y b/y", "old mode 100644", "new mode 100755", "\tdiff --git a/x b/x", "\tdeleted file mode 100644"), line: 4, msg: "indented"},
	{name: "RFC 934 quoted header", give: lines("- --- a/x", "+++ b/x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "RFC 934"},
	{name: "git header outside a section", give: lines("rename from x", "rename to y", "--- a/z", "+++ b/z", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "outside a diff --git"},
	{name: "Index line naming another file", give: lines("Index: secret.txt", "====", "--- a/x", "+++ b/x", "@@ -1 +1 @@", "-a", "+b"), line: 1, msg: "Index: line"},
	{name: "Binary files line read two ways", give: lines("Binary files a/x and y and b/x and y differ"), line: 1, msg: "apart"},
	{name: "a good section, then a bad one", give: lines("--- a/x", "+++ b/x", "@@ -1 +1 @@", "-a", "+b", "garbage", "+++ b/y", "@@ -1 +1 @@", "-a", "+b"), line: 7, msg: "without a ---"},
}

func TestChangesErrors(t *testing.T) {
	for _, tt := range errorTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Changes(tt.give)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Changes() = %+v, %v; want a *ParseError", got, err)
			}
			if got != nil {
				t.Errorf("Changes() returned %+v with its error", got)
			}
			if pe.Line != tt.line || !strings.Contains(pe.Msg, tt.msg) {
				t.Errorf("Changes() error = line %d %q; want line %d containing %q", pe.Line, pe.Msg, tt.line, tt.msg)
			}
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	tests := []struct {
		give *ParseError
		want string
	}{
		{give: &ParseError{Line: 12, Msg: "hunk ends early"}, want: "line 12: hunk ends early"},
		{give: &ParseError{Msg: "empty patch"}, want: "empty patch"},
	}
	for _, tt := range tests {
		if got := tt.give.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
