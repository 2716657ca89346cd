package patch_test

import (
	"fmt"

	"github.com/wardenhq/warden/action/patch"
)

func ExampleChanges() {
	changes, err := patch.Changes(`diff --git a/old.txt b/new.txt
similarity index 100%
rename from old.txt
rename to new.txt
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 6e263ab..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-obsolete
`)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	for _, c := range changes {
		fmt.Printf("%s %q %q\n", c.Op, c.Old, c.New)
	}

	_, err = patch.Changes("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n")
	fmt.Println("refused:", err)
	// Output:
	// rename "old.txt" "new.txt"
	// delete "gone.txt" ""
	// refused: line 3: hunk ends early: 1 old and 1 new lines missing
}
