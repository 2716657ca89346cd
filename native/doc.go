// Package native runs Warden's own tools (requirement M3): the file tools, shell_exec,
// git_status and git_diff, net_fetch and net_search, for one session's workspace.
//
// An action reaches the Executor already normalised and reviewed (packages action and review):
// its Paths hold the resolved absolute paths the review judged, and those are what the
// executor acts on. The executor checks again anyway (defence in depth):
//
//   - every path must lie inside the workspace, or the call fails with "outside the
//     workspace";
//   - every file operation goes through an os.Root opened on the workspace, so no symbolic
//     link, however it was made, leads a read or a write out of it; so does every lookup
//     git_status, git_diff and files_patch make before git runs (the working directory, the
//     .git entry, the git directory a .git file names, a linked work tree's commondir, the
//     paths a patch touches); no file tool looks a path up again by name after checking
//     it (git does: see below);
//   - the directory holding a file is opened and, where /proc shows it, checked to be the
//     directory the review judged; the file is then reached by its base name alone, checked
//     with lstat before and fstat after it is opened, so a link swapped in after the review
//     is refused rather than followed to another file inside the workspace;
//   - writes are atomic (a temporary file in the same directory, then a rename), keep the
//     permission bits of the file they replace, and never follow a link at the final name.
//
// A tool failure the model should see (a missing file, an edit whose old text does not occur
// exactly once, a non-zero exit) is a Result with IsError set and a clear Text. An error
// return is a failure of Warden itself, or an action that cannot have been reviewed (one that
// still carries problems, or lacks the resolved path of a role its kind needs).
//
// # Programs run in the sandbox
//
// The programs native tools run, shell_exec's commands (bash -c, or sh -c where bash is
// missing) and git for git_status, git_diff and files_patch, run in package sandbox: the
// workspace read-write, the system's programs read-only, nothing else of the host, no
// capabilities, a network namespace of their own. A command's only way out is the session's
// egress proxy (Sandbox.Proxy); git has none at all, and /etc is hidden from it besides
// Sandbox.Hidden (it is told to read no system configuration, and needs nothing else
// there). Where the sandbox cannot be applied the program does not run and the tool fails
// saying so; only Sandbox.Off, the operator's explicit choice (warden serve --no-sandbox),
// runs them unconfined, as Warden's own user with this host's files and network.
//
// git and the commands reach the paths they use by name, as any program does: the checks
// before they start give clear messages, and what holds them inside the workspace whatever
// changes meanwhile (a directory swapped for a link to elsewhere between a check and git's
// own opens, say) is the sandbox. Such a swap can still lead them to another place inside
// the workspace, never out of it. With the sandbox off it can lead git out: Off gives up
// that guarantee.
//
// In both modes a program gets only Options.Env (never Warden's own environment, which holds
// secrets) plus, for shell_exec, the bindings passed to Run; empty stdin (a patch, for git
// apply); and a wall-clock limit. The shell, sh and git are found once, on the PATH of
// Options.Env, skipping relative entries and anything inside the workspace, so an agent
// cannot plant the program Warden runs. In the sandbox, everything the program started is
// killed when it ends, times out or is cancelled. With the sandbox off it runs in its own
// process group: when the limit passes or the context is cancelled the whole group is
// killed, and when the first process ends, whatever it left running in its group is killed
// too (before the first process is reaped, so the group id cannot have been reused); a
// process that leaves the group (setsid, a double fork into a new session) escapes this
// clean-up, and the result says so when it still holds the output open.
//
// Not confined in either mode: a hard link in the workspace to a file outside it is read and
// edited like any other file (no path resolution can see it).
//
// # Git in a repository the agent can write
//
// A repository's own configuration can run programs: core.fsmonitor, hooks (post-index-change
// runs when status refreshes the index), filter drivers (clean, smudge, process), diff drivers
// (textconv, command), diff.external, pagers, and transports for the lazy fetches of a partial
// clone. git_status and git_diff find the repository themselves, inside the workspace only
// (GIT_DIR and GIT_WORK_TREE are set, so core.worktree and a discovery past the workspace
// cannot point git elsewhere), ignore the system and global configuration, and override the
// rest on the command line: core.fsmonitor=false, core.hooksPath=/dev/null,
// --no-optional-locks, --no-pager, protocol.allow=never, --no-ext-diff, --no-textconv,
// --ignore-submodules=dirty (checking a submodule's work tree runs git there, under its own
// configuration), and every filter and diff driver the repository's configuration defines is
// emptied by name. The drivers are listed by git config and git is run with them emptied in
// one sandboxed start: a small sh script (gitScript) that expands the names only inside
// double quotes. Left open: a configuration written between the run that lists the drivers
// and the run of git itself (a hard block on .git/config closes it for agents without a
// shell); files the configuration and the repository name and git reads
// (core.attributesFile, core.excludesFile, include.path, diff.orderFile, the object stores of
// objects/info/alternates), which may lie outside the workspace but are read, not run: in
// the sandbox only the system's programs and libraries are there to read.
//
// files_patch runs git apply outside any repository (GIT_DIR=/dev/null), so no repository
// configuration applies at all, with the strip level (-p1 or -p0) that makes git read the same
// paths as the review did, and refuses a patch git would read differently. That takes two
// sandboxed starts (three for a patch without a/ and b/ prefixes): git apply --numstat for
// each strip level until git names the reviewed files, then git apply. They are not folded
// into one script because the choice between them compares git's NUL-separated names with
// the review's in Go.
//
// # Not here
//
// spawn_subagent is run by the gateway, which starts the child session; Run returns
// ErrNotNative for it. net_search has no provider yet and always fails.
package native
