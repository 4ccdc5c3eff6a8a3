package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/skills"
)

// tomlBlock is a fenced TOML example of a Markdown file.
var tomlBlock = regexp.MustCompile("(?ms)^```toml\n(.*?)^```")

// TestDocsTOMLExamples: every TOML example in README.md and docs/ is a
// file evoclaw accepts as it stands: a skill.toml (it has a [skill]
// table), an agent.toml (it sets agent_id) or an evoclaw.toml, with no
// unknown key, wrong type or refused value. A renamed key, or an example
// edited by hand, fails here before a reader copies it.
func TestDocsTOMLExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	files = append(files, filepath.Join("..", "..", "README.md"))
	n := 0
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range tomlBlock.FindAllSubmatch(doc, -1) {
			n++
			body := string(m[1])
			t.Run(fmt.Sprintf("%s#%d", filepath.Base(f), i+1), func(t *testing.T) {
				dir := t.TempDir()
				var err error
				switch {
				case regexp.MustCompile(`(?m)^\[skill\]`).MatchString(body):
					path := filepath.Join(dir, "skill.toml")
					writeFile(t, path, body)
					_, err = skills.Load(path)
				case regexp.MustCompile(`(?m)^agent_id\s*=`).MatchString(body):
					path := filepath.Join(dir, "agent.toml")
					writeFile(t, path, body)
					_, err = edge.LoadConfig(path)
				default:
					path := filepath.Join(dir, "evoclaw.toml")
					writeFile(t, path, body)
					_, err = orchestrator.LoadConfig(path)
				}
				if err != nil {
					t.Errorf("%s, example %d (%.60q...):\n%v", f, i+1, body, err)
				}
			})
		}
	}
	if n < 10 {
		t.Fatalf("found %d TOML examples; the pattern no longer finds them", n)
	}
}
