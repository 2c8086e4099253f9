package main

import (
	"os"
	"path/filepath"
)

// replaceFile replaces path with data at mode. It writes beside the file
// and renames over it, so a reader never sees the file half written or
// with a looser mode, and a failed write leaves the old one; the caller
// says which error the failure is.
func replaceFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(mode)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	return werr
}
