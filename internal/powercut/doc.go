// Package powercut is a FUSE filesystem that loses, on demand, everything
// that was not fsynced: the power-cut harness of the durability tests (what
// LazyFS is to etcd's and Jepsen's tests).
//
// A mounted FS behaves as a normal directory tree. Behind it each file has
// two contents: the volatile one (what reads see) and the durable one (what
// the last fsync or fdatasync of that file saved), and each directory has two
// entry tables: the volatile one and the one its last fsync saved. Cut
// throws every volatile state away, exactly as a power cut would on a disk
// that honours fsync and nothing more, and remounts the durable state:
//
//   - write, pwrite, O_APPEND, truncate, fallocate: volatile until the file
//     is fsynced (fsync and fdatasync save its data and its size);
//   - create, mkdir, rename, unlink, rmdir: volatile until the directory that
//     holds the entry is fsynced (a new file whose directory was never synced
//     is gone after a cut, however often the file itself was synced);
//   - fsync and fsyncdir always get a real answer (never ENOSYS, which makes
//     the kernel treat every later fsync as done without asking).
//
// Two modes say which filesystems a finding bites on. [Strict] is POSIX:
// only a directory's own fsync saves its entries. [Ext4] adds what ext4 does
// for a new file: a file's fsync also saves its own directory entry, and
// those of its new parents up to the root.
//
// A cut models the disk, not the processes: kill the processes that use
// the mount first (kill -9, by PID), then call Cut. Operations that still
// arrive on the old mount fail with EIO.
//
// Caveats: hard links, symlinks, extended attributes and file locks
// forwarded to the filesystem are not supported; permission bits and times
// are kept but not made durable separately; a file renamed from one
// directory to another, with only the new directory synced, keeps both names
// after a cut (POSIX allows it; a journalling filesystem shows one).
//
// Mounting needs root and /dev/fuse (go-fuse mounts directly, without
// fusermount). Use [MountForTest] in tests: it mounts under t.TempDir,
// served by a child process ([ChildFS] says why), and unmounts in
// t.Cleanup, also when the test fails.
package powercut
