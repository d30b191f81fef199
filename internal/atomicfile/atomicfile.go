// Package atomicfile writes a file so that a reader sees the old bytes or the new, never half:
// a server watching accounts.conf, or a credentials file being rotated.
package atomicfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path through a temporary file in the same directory, synced and
// renamed into place, with the given mode.
func Write(path string, data []byte, mode fs.FileMode) error {
	return WriteOwned(path, data, mode, -1, -1)
}

// WriteOwned is Write giving the file an owner and group (-1 keeps the writer's), set on the
// temporary file before the rename so the file is never seen with the wrong ones.
func WriteOwned(path string, data []byte, mode fs.FileMode, uid, gid int) error {
	return write(path, mode, uid, gid, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFrom is Write of what fill writes, as it writes it: a file of tens of megabytes never
// held whole. Nothing is renamed into place unless fill returns nil.
func WriteFrom(path string, mode fs.FileMode, fill func(io.Writer) error) error {
	return write(path, mode, -1, -1, fill)
}

func write(path string, mode fs.FileMode, uid, gid int, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // gone already after a successful rename
	if uid >= 0 || gid >= 0 {
		if err := tmp.Chown(uid, gid); err != nil {
			tmp.Close()
			return fmt.Errorf("writing %s: keeping its owner and group: %w", path, err)
		}
	}
	// After the chown, which may clear set-id bits.
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := fill(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
