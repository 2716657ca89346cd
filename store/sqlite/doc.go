// Package sqlite is Warden's embedded store (E1): one SQLite file, no setup, holding approval
// cards and standing approvals (approval.Store), the spending and run ledger (budget.Store), the
// audit trail (audit.Log), bearer tokens (auth.Store), tenants' hard blocks (boundary.Store),
// the instances serving on the file (instance.Store) and the management plane's objects
// (manage.Store). It uses modernc.org/sqlite, a pure Go
// SQLite, so Warden builds without cgo.
//
// # Opening
//
// [Open] creates the file if needed and brings its schema up to date with the numbered
// migrations embedded in the binary (recorded in the schema_version table). A file written by a
// newer Warden, whose schema is ahead of this one's, is refused ([ErrNewerSchema]) rather than
// misread. Open takes the write lock to migrate, so a database that another process holds
// locked is reported after the busy timeout ([ErrLocked]), never waited on forever.
//
// # Durability
//
// The database runs in WAL mode with synchronous=NORMAL: a commit is written to the WAL file but
// not synced to the disk. So a call that returned (an audit event appended, a reservation made)
// survives the Warden process being killed at any moment, because the operating system holds
// the write; but if the machine loses power or the kernel crashes before the WAL is next synced
// (at a checkpoint), the last transactions can be lost, though the file is never corrupted.
// Deployments that need every call to survive a power cut should use the PostgreSQL store.
//
// Concurrent audit appends are committed together (group commit, [DB.Append]): each still
// returns only after its event is committed, so a decision is in the WAL before its call runs,
// but one transaction serves every append that queued while the previous one was written. A lone
// append is one statement, as before. Each event is linked into its tenant's hash chain in
// the same statement or transaction (see chainCache in audit.go, and docs/audit.md).
// Checkpoints run in the background; the WAL file (the path plus "-wal") grows to about 43 MB
// at most: past that the writer restarts the WAL itself, waiting for a slow background
// checkpoint if it must, so the bound holds on a loaded machine too.
//
// # Concurrency
//
// A [DB] is safe for concurrent use. Writes in one process go through one connection, one
// transaction at a time, with statements prepared once at Open; reads use a separate pool and
// run beside the writer (WAL readers do not block it). Several processes may open the same file:
// steps that read and then write (StartRun, Reserve, Resolve, ...) run in BEGIN IMMEDIATE
// transactions, which take SQLite's single write lock before reading, so the ledger's
// arithmetic holds across processes exactly as within one; a process waiting for the lock
// waits up to the busy timeout ([Options.BusyTimeout]).
//
// Watch is woken at once by a Resolve in the same process, and within about 200 ms by one in
// another process on the same file (each DB polls the cards its watchers wait for).
// WatchObjects likewise: at once for a PutObject or DeleteObject of this process, within the
// poll interval for one of another (each DB compares the sum of the objects' revisions, which
// grows with every write because a deleted object's row stays).
package sqlite
