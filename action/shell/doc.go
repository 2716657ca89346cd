// Package shell says what a shell command would do, statically: every simple command it runs
// (after wrappers such as sudo, env or timeout are stripped), the files those commands would
// read, write, delete or execute, and everything that cannot be known without running it.
//
// It parses with mvdan.cc/sh/v3/syntax (the bash dialect) and walks every simple command:
// lists, pipelines, subshells, groups, if/for/while/until/case/select, [[ ]] and arithmetic
// (for their substitutions), functions (analysed where they are called, and once more if never
// called), command and process substitution, declarations, and the strings run by bash -c,
// sh -c, eval, trap, watch, su -c, xargs and find -exec. cd, pushd and popd are tracked, so
// relative paths are joined to the directory the command really runs in.
//
// # The program table
//
// A program's file effects come from a table that knows each program's option grammar where
// it matters: rm -r is a recursive delete, cp's last operand is the target, dd's of= is a
// write, sed -i rewrites its operands. The table lives in the files named for the families it
// covers (programs.go, copy.go, find.go, archive.go, net.go, git.go, text.go, interp.go,
// builtins.go, wrappers.go, unknown.go, arith.go) and is extended by adding an entry. A
// program that is not in the table is not "touches nothing" (unknown.go): every operand is
// read as a path, the value of an output-like option (-o, -out, --out*, --output*, of=) is
// written, and a first operand that names a known program is analysed as the command it may
// run. A program run by a path is the program it is, where that can be seen: a link to a
// known program, or a copy or link made earlier in the same command.
//
// Which programs report reads: those that read file contents (cat, grep, sort, jq, ...),
// recursively where they walk (grep -r, rg), those that list directories (ls, du, tree, find:
// a read of the directories below, not of the files in them, since a listing reads no file:
// Effect.Listing) and
// those that inspect a path (stat, file). test, [, realpath, readlink, basename and dirname
// report nothing. A program that reads the working directory when given no path (grep -r,
// rg, du, tree, find) reports a read of it. An interpreter or a shell running a script, and
// source, read the script as well as execute it.
//
// # Unknowns
//
// What cannot be known statically is an Unknown, never a silent allow: a program name from an
// expansion, an expansion in a checked position (an operand of a program with file effects, a
// redirect target, a cd target), an interpreter running inline code (python -c, node -e,
// perl -e, ...), a shell reading code from its input (curl x | sh), an awk program or sed
// script that can run commands, xargs feeding its input to a program that changes files or
// runs code, code nested deeper than Options.MaxNesting, and a command too large to follow
// (an analysis visits at most a bounded number of statements). An expansion anywhere else is
// plain data: echo $HOME, printf '%s' "$X" and git commit -m "rm -rf /" yield nothing. A glob
// is not an Unknown: rm *.log deletes the pattern joined to the working directory.
//
// # Paths
//
// Paths are joined to the working directory lexically, then made real through
// Options.Resolve. A ".." after a symbolic link is resolved as the kernel would, from the
// link's target, so the part before each ".." is made real first. cd targets are made real
// the same way. ~ and ~/x are Options.Home; ~user is an Unknown. /dev/null, the standard
// streams, /dev/tty, the random devices and /dev/fd/N are not file effects.
//
// # Approximations
//
// These are deliberate, and each errs towards reporting more, never less:
//
//   - A cd is assumed to succeed. What runs conditionally (the right side of && and ||, if
//     branches, case arms, loop bodies) may or may not run, so a directory that differs
//     between the paths is not known afterwards. A loop whose body changes directory is
//     walked a second time from an unknown directory, for the later iterations.
//   - A function's body is analysed at every call, and a command named like a function is
//     analysed both as the function and as the program of that name. A recursive call is not
//     followed again. Function definitions are not scoped to subshells.
//   - Variables are never evaluated: $X is unknown even after X=/tmp. A for loop's variable
//     alone ("$f") is the exception: it stands for each word of the loop while nothing in
//     the body can change it (loopvar.go). Only how inert the
//     values given to a variable are is followed, for the places where bash evaluates a value
//     as code (arith.go), and flow-insensitively: every value given anywhere counts. An
//     alias's body is analysed as code where it is defined. Setting a variable that changes
//     what names mean (PATH, HOME, CDPATH, BASH_CMDS, ...) or makes programs run code is an
//     Unknown, except PATH=$PATH:dir.
//   - A cd is assumed to succeed or fail without changing anything else, so in a && b && c,
//     c runs where b left the shell.
//   - mv's sources and targets are recursive: a source may be a directory. A copy into a
//     target that may be a directory also reports target/name.
//   - A sourced script is executed but its code is not read: a cd inside it is not seen.
//   - patch, git apply, tar -x and unzip write the whole tree under their directory (what
//     they write is named inside their input, which is not read). GNU patch and tar refuse
//     names with "..", so the directory bounds them; tar -P is an Unknown.
//   - A git command reads the .git of its directory and of every directory above it up to the
//     starting one, recursively, and reports the index, objects, refs, logs and top-level
//     files of .git its subcommand writes there (gitrepo.go); status, diff, add, commit and
//     stash list the work tree from the starting directory. Which tracked files changed is
//     the index's: their reads are not reported. git init writes its .git as a change in
//     place (Effect.From), judged on the repository already there. Working-tree writes of
//     merge, pull, rebase, stash, cherry-pick and revert are not reported; the sandbox
//     confines them.
//   - Bash lists the directory of every glob it expands (globdir.go): the directory before
//     the first wildcard, or a listing of the tree below it where a later component has one.
//   - A symbolic link made by ln -s is followed by every later path (links.go): an effect
//     through it is reported as named and where the link leads. Links made by other
//     programs (tar -x, cp -a, git checkout) are not.
//   - xargs and parallel: echo fed from input has no Unknown; a program that reads, writes or
//     runs files, or one not in the table, fed names from input, is an Unknown.
//   - A program copied or linked under another name is followed only when its source is named
//     as a known program (ln -s /bin/rm r), not through a link to one.
//   - ssh's remote command runs on another host and has no local effects.
//   - Files named inside other files are not read: sha256sum -c list, tar -T list.
//
// # Concurrency
//
// Analyze may be called concurrently; the tables are built when the package is initialised
// and never change.
package shell
