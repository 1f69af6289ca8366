package powercut

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// all runs steps in order and stops at the first error.
func all(steps ...func() error) func() error {
	return func() error {
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		return nil
	}
}

func withFile(path string, flags int, fn func(*os.File) error) error {
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func fsyncDir(dir string) func() error {
	return func() error { return withFile(dir, os.O_RDONLY, (*os.File).Sync) }
}

// writeNew creates name with data, fsyncing the file when sync is set.
func writeNew(d, name, data string, sync bool) func() error {
	return func() error {
		return withFile(filepath.Join(d, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, func(f *os.File) error {
			if _, err := f.Write([]byte(data)); err != nil {
				return err
			}
			if sync {
				return f.Sync()
			}
			return nil
		})
	}
}

// durable creates name with data, then fsyncs the file and the directory.
func durable(d, name, data string) func() error {
	return all(writeNew(d, name, data, true), fsyncDir(filepath.Join(d, filepath.Dir(name))))
}

func writeAt(d, name, data string, off int64, sync bool) func() error {
	return func() error {
		return withFile(filepath.Join(d, name), os.O_WRONLY, func(f *os.File) error {
			if _, err := f.WriteAt([]byte(data), off); err != nil {
				return err
			}
			if sync {
				return f.Sync()
			}
			return nil
		})
	}
}

func appendTo(d, name, data string, sync bool) func() error {
	return func() error {
		return withFile(filepath.Join(d, name), os.O_WRONLY|os.O_APPEND, func(f *os.File) error {
			if _, err := f.Write([]byte(data)); err != nil {
				return err
			}
			if sync {
				return f.Sync()
			}
			return nil
		})
	}
}

func truncate(d, name string, size int64, sync bool) func() error {
	return func() error {
		return withFile(filepath.Join(d, name), os.O_WRONLY, func(f *os.File) error {
			if err := f.Truncate(size); err != nil {
				return err
			}
			if sync {
				return f.Sync()
			}
			return nil
		})
	}
}

func fallocate(d, name string, mode uint32, off, length int64, sync bool) func() error {
	return func() error {
		return withFile(filepath.Join(d, name), os.O_WRONLY, func(f *os.File) error {
			if err := unix.Fallocate(int(f.Fd()), mode, off, length); err != nil {
				return err
			}
			if sync {
				return f.Sync()
			}
			return nil
		})
	}
}

func rename(d, from, to string) func() error {
	return func() error { return os.Rename(filepath.Join(d, from), filepath.Join(d, to)) }
}

func mkdir(d, name string) func() error {
	return func() error { return os.Mkdir(filepath.Join(d, name), 0o755) }
}

// expectNow checks the content before the cut (the volatile view).
func expectNow(d, name, want string) func() error {
	return func() error { return expect(filepath.Join(d, name), want, false) }
}
