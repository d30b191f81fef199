package catalogue

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// FileDigests are the SHA-256 of every file the loader reads from the catalogue in dir —
// mesh.yaml, inventory.yaml, credentials.yaml and the manifests — by their path in the
// catalogue: what a saved plan records, so applying it later can name each file that moved.
func FileDigests(dir string) (map[string]string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	var ignored Findings
	files, err := manifestFiles(root, &ignored)
	if err != nil {
		return nil, err
	}
	files = append(files, MeshFile, InventoryFile, CredentialsFile)
	out := make(map[string]string, len(files))
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if os.IsNotExist(err) && (rel == InventoryFile || rel == CredentialsFile) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		out[rel] = "sha256:" + hex.EncodeToString(sum[:])
	}
	return out, nil
}
