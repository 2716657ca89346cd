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
//     link, however it was made, leads a read or a write out of it;
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
// # Commands run unsandboxed
//
// Until the sandbox issue lands, shell_exec runs the command with bash -c (sh -c where bash is
// missing) as Warden's own user, UNSANDBOXED: the review decides what may run, and nothing
// but the review confines what it does. What the executor does do: the command gets only
// Options.Env (never Warden's own environment, which holds secrets) plus the bindings passed to
// Run, empty stdin, its own process group, and a wall-clock limit. The shell and git are found
// once, on the PATH of Options.Env, skipping relative entries and anything inside the
// workspace, so an agent cannot plant the program Warden runs. When the limit passes or the
// context is cancelled the whole group is killed; when the command's first process ends,
// whatever it left running in its group is killed too, so nothing outlives the call. On Linux
// the group is killed before the first process is reaped, so its id cannot have been reused.
//
// What is left for the sandbox: a process that leaves the group (setsid, a double fork into a
// new session) escapes this clean-up and keeps running, and the result says so when it still
// holds the output open; nothing limits memory, processes, CPU or the files written; the
// command can reach the network and every file Warden's user can; if Warden itself dies, the
// commands it started are not killed; and a hard link in the workspace to a file outside it
// is read and edited like any other file (no path resolution can see it).
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
// emptied by name. Left open: a configuration written between the run that lists the drivers
// and the run of git itself (a hard block on .git/config closes it for agents without a shell);
// files the configuration names and git reads (core.attributesFile, core.excludesFile,
// include.path, diff.orderFile), which may lie outside the workspace but are read, not run.
//
// files_patch runs git apply outside any repository (GIT_DIR=/dev/null), so no repository
// configuration applies at all, with the strip level (-p1 or -p0) that makes git read the same
// paths as the review did, and refuses a patch git would read differently.
//
// # Not here
//
// spawn_subagent is run by the gateway, which starts the child session; Run returns
// ErrNotNative for it. net_search has no provider yet and always fails.
package native
