package shell_test

import (
	"fmt"

	"github.com/wardenhq/warden/action/shell"
)

func ExampleAnalyze() {
	a, err := shell.Analyze(`cd /srv && sudo rm -rf cache; echo "rm -rf /" > notes.txt; $TOOL x`,
		shell.Options{Dir: "/home/dev", Home: "/home/dev"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range a.Commands {
		fmt.Printf("command %q in %s\n", c.Normalized(), c.Dir)
	}
	for _, e := range a.Effects {
		fmt.Printf("%s %s recursive=%v (%s)\n", e.Op, e.Path, e.Recursive, e.Why)
	}
	for _, u := range a.Unknowns {
		fmt.Printf("unknown at %s: %s: %s\n", u.Pos, u.What, u.Text)
	}
	// Output:
	// command "cd /srv" in /home/dev
	// command "rm -rf cache" in /srv
	// command "echo rm -rf /" in /srv
	// command "$TOOL x" in /srv
	// delete /srv/cache recursive=true (rm operand)
	// write /srv/notes.txt recursive=false (redirect >)
	// unknown at 1:60: the program name comes from an expansion: $TOOL
}
