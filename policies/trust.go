package policies

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/internal/safefile"
)

// The trust store: which version of each workspace's policy file the user
// trusted, as direnv's `allow` and mise's `trust` do.
//
// Under a preset that trusts the workspace's policy file (standard,
// permissive) the file may loosen the policy — but the workspace is
// writable by the agent, so its bash in one session (or a `git pull`)
// could write a file that escalates the next session. A file loosens only
// in a version whose SHA-256 the user recorded with `lite-agent policy
// trust`; any other version is held to what strict allows (tighten-only).
//
// The store lives outside every workspace, so the sandbox of commands
// (Landlock: the workspace read-write, nothing of $HOME) keeps it
// unwritable to the agent. A session whose writable roots would hold
// the store (the workspace at $HOME, a write grant over ~/.local) is
// refused by the assembler (local's ownFilesOutsideWritable).

// trustRecordLimit bounds what is read from a record: a real one is two
// short lines.
const trustRecordLimit = 8 << 10

// TrustStoreDir is the default trust store:
// $XDG_STATE_HOME/lite-agent/trusted-policies, or
// ~/.local/state/lite-agent/trusted-policies.
func TrustStoreDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "lite-agent", "trusted-policies"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the trust store of workspace policy files: %w (set XDG_STATE_HOME)", err)
	}
	return filepath.Join(home, ".local", "state", "lite-agent", "trusted-policies"), nil
}

// storeDir is store, or the default when store is "".
func storeDir(store string) (string, error) {
	if store != "" {
		return store, nil
	}
	return TrustStoreDir()
}

// trustKey is the absolute, symlink-resolved path of workspace: the same
// workspace reached through a symlink shares one record.
func trustKey(workspace string) (string, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// trustRecord is the record's path for the workspace file rel, and the
// record's key. rel "" is the workspace's policy file, whose records keep
// the name they had before other files could be trusted (the hash of the
// workspace); any other file's is the hash of the workspace and rel.
func trustRecord(store, workspace, rel string) (path, key string, err error) {
	dir, err := storeDir(store)
	if err != nil {
		return "", "", err
	}
	key, err = trustKey(workspace)
	if err != nil {
		return "", "", err
	}
	name := key
	if rel != "" {
		if rel, err = trustRel(rel); err != nil {
			return "", "", err
		}
		name = key + "\x00" + rel
	}
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(dir, hex.EncodeToString(sum[:])), key, nil
}

// trustRel is rel as records name it: clean, with slashes, and beneath
// the workspace (a record for "../x" would trust a file the user owns
// anyway, and mean nothing).
func trustRel(rel string) (string, error) {
	c := filepath.Clean(rel)
	if !filepath.IsLocal(c) {
		return "", fmt.Errorf("%q is not a path inside the workspace", rel)
	}
	return filepath.ToSlash(c), nil
}

// recordContent is a record: the file's digest, then the workspace (for a
// person reading the store, and checked so a record never applies to a
// workspace other than the one it names), then, for a file other than
// the policy file, its path in the workspace (checked likewise).
func recordContent(key, rel string, digest [32]byte) []byte {
	b := fmt.Appendf(nil, "sha256 %s\nworkspace %s\n", hex.EncodeToString(digest[:]), key)
	if rel != "" {
		if r, err := trustRel(rel); err == nil {
			b = fmt.Appendf(b, "file %s\n", r)
		}
	}
	return b
}

// Trust records f — the workspace's policy file as LoadWorkspaceFile read
// it — as trusted in this exact version, in store ("" = TrustStoreDir()).
// The record is written atomically (a temporary file renamed over it),
// mode 0600, in a directory of mode 0700. It returns the record's path.
func Trust(store, workspace string, f *File) (string, error) {
	return TrustFile(store, workspace, "", f.Digest)
}

// TrustFile records another file of the workspace — rel, its path there,
// such as ".mcp.json" — as trusted in the version whose SHA-256 is digest
// (of the bytes its loader read and will read). rel "" is the policy
// file. Like Trust, it returns the record's path.
func TrustFile(store, workspace, rel string, digest [32]byte) (string, error) {
	path, key, err := trustRecord(store, workspace, rel)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(path)
	// 0700 also for a store that existed wider: the records say which
	// workspaces you trust, for nobody else to read.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the trust store: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("the trust store: %w", err)
	}
	// CreateTemp makes the file 0600; the rename makes the new record
	// appear whole or not at all.
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("writing the trust record: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	_, err = tmp.Write(recordContent(key, rel, digest))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("writing the trust record: %w", err)
	}
	return path, nil
}

// Untrust removes the trust record of workspace from store ("" =
// TrustStoreDir()). It reports whether there was one.
func Untrust(store, workspace string) (bool, error) {
	return UntrustFile(store, workspace, "")
}

// UntrustFile removes the trust record of the workspace file rel ("" =
// the policy file). It reports whether there was one.
func UntrustFile(store, workspace, rel string) (bool, error) {
	path, _, err := trustRecord(store, workspace, rel)
	if err != nil {
		return false, err
	}
	err = os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Trusted reports whether f, the workspace's policy file as read, is the
// version the user trusted. Anything short of an exact match — no record,
// a record for another workspace or version, a corrupt, oversized or
// unreadable one, no store at all — is "not trusted": the file then only
// tightens, which is always safe.
func Trusted(store, workspace string, f *File) bool {
	return FileTrusted(store, workspace, "", f.Digest)
}

// FileTrusted reports whether digest is the version of the workspace file
// rel ("" = the policy file) that the user trusted, as Trusted does.
func FileTrusted(store, workspace, rel string, digest [32]byte) bool {
	path, key, err := trustRecord(store, workspace, rel)
	if err != nil {
		return false
	}
	// Read as the user's policy file is: a regular file opened without
	// blocking (a FIFO planted there is no record, never a hang), bounded.
	data, err := safefile.ReadUserFile(path, "", trustRecordLimit)
	if err != nil {
		return false
	}
	return bytes.Equal(data, recordContent(key, rel, digest))
}
