package sandboxtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrebuiltBinary(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "virt-operator"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := prebuilt(dir, "virt-operator"); err != nil || got != filepath.Join(dir, "virt-operator") {
		t.Errorf("prebuilt(virt-operator) = %q, %v; want its path", got, err)
	}
	for name, want := range map[string]string{
		"virt-sandbox": "no such file",
		"plain":        "not an executable file",
		"folder":       "not an executable file",
	} {
		_, err := prebuilt(dir, name)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), BinariesEnv) {
			t.Errorf("prebuilt(%s): %v, want an error naming $%s and %q", name, err, BinariesEnv, want)
		}
	}
}
