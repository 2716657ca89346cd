//go:build !linux

package action

// fsKeepsCtime reports false: elsewhere than Linux no file system is relied on to move a
// directory's ctime on every change, and a View's answers are never kept (see Seen).
func fsKeepsCtime(string) bool { return false }
