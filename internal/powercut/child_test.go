package powercut

import (
	"os"
	"path/filepath"
	"testing"
)

// TestChildCut: a filesystem served by a child process loses what was not
// synced at a cut, keeps what was, and its process exits on Unmount.
func TestChildCut(t *testing.T) {
	c := MountForTest(t, Strict)
	synced, unsynced := filepath.Join(c.Dir(), "synced"), filepath.Join(c.Dir(), "unsynced")
	if err := all(writeNew(c.Dir(), "synced", "kept", true), fsyncDir(c.Dir()),
		writeNew(c.Dir(), "unsynced", "lost", false))(); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Cut()
	if err != nil {
		t.Fatal(err)
	}
	if rep.LostEntries != 1 {
		t.Errorf("cut report %v, want 1 lost entry", rep)
	}
	if got, err := os.ReadFile(synced); err != nil || string(got) != "kept" {
		t.Errorf("synced file after the cut: %q, %v", got, err)
	}
	if _, err := os.Stat(unsynced); !os.IsNotExist(err) {
		t.Errorf("unsynced file after the cut: %v, want it gone", err)
	}
	if err := c.Unmount(); err != nil {
		t.Fatal(err)
	}
	if c.cmd.ProcessState == nil || !c.cmd.ProcessState.Exited() {
		t.Errorf("the filesystem's process did not exit: %v", c.cmd.ProcessState)
	}
	if _, err := c.Cut(); err == nil {
		t.Error("a cut after Unmount succeeded")
	}
}
