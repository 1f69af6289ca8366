// Package durablefs creates, syncs and removes a replica's directories so
// that a power cut keeps what was made and does not bring back what was
// removed.
package durablefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A replica's files survive a power cut only if every directory entry
// they depend on is synced too: a file's fsync saves its content, not its
// name (POSIX; ext4 happens to save a new file's name as well, other
// filesystems do not). The helpers below make the directories as durable
// as the files: internal/powercut's filesystem loses whatever they miss.

// SyncDir fsyncs directory dir, making its entries durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// MkdirAllDurable is os.MkdirAll that also fsyncs the parent of every
// directory it creates, so that a power cut keeps the whole path.
func MkdirAllDurable(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAllDurable(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return SyncDir(parent)
}

// trashSuffix marks a replica's directory that is being deleted.
const trashSuffix = ".removing"

// RemoveDirDurably deletes dir so that a power cut cannot bring it back
// under its name: it renames dir away, syncs the parent, then deletes it.
// A cut in the middle leaves a directory named *.removing, which no
// replica opens.
func RemoveDirDurably(dir string) error {
	trash := fmt.Sprintf("%s.%d%s", dir, time.Now().UnixNano(), trashSuffix)
	if err := os.Rename(dir, trash); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	parent := filepath.Dir(dir)
	if err := SyncDir(parent); err != nil {
		return err
	}
	if err := os.RemoveAll(trash); err != nil {
		return err
	}
	return SyncDir(parent)
}

// RemoveTrash deletes what RemoveDirDurably left in dir when the power
// was cut in the middle.
func RemoveTrash(dir string) error {
	return RemoveMatching(dir, func(e os.DirEntry) bool {
		return e.IsDir() && strings.HasSuffix(e.Name(), trashSuffix)
	}, os.RemoveAll)
}

// RemoveMatching deletes with remove each entry of dir that match picks;
// a dir that does not exist has none.
func RemoveMatching(dir string, match func(os.DirEntry) bool, remove func(path string) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if match(e) {
			errs = append(errs, remove(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}
