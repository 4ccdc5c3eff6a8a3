package skills

import (
	"path/filepath"
	"testing"
)

// BenchmarkCatalogDefs measures listing tool definitions from a catalog
// whose files have not changed (a stat per skill file, no parsing).
func BenchmarkCatalogDefs(b *testing.B) {
	c := NewCatalog(filepath.Join("..", "testdata", "skills"))
	c.Defs()
	b.ReportAllocs()
	for b.Loop() {
		c.Defs()
	}
}

// BenchmarkLoadDirDefs is the same without the cache: parse every
// skill.toml and build every schema each time.
func BenchmarkLoadDirDefs(b *testing.B) {
	root := filepath.Join("..", "testdata", "skills")
	b.ReportAllocs()
	for b.Loop() {
		skills, _ := LoadDir(root)
		for _, s := range skills {
			for _, t := range s.Tools {
				t.Def()
			}
		}
	}
}
