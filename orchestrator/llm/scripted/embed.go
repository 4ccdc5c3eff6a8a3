package scripted

import (
	"embed"
	"fmt"
)

//go:embed transcripts/*.json
var transcripts embed.FS

// Builtin returns a transcript that ships inside the binary ("demo").
func Builtin(name string) (*Provider, error) {
	b, err := transcripts.ReadFile("transcripts/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("built-in transcript %q: not found", name)
	}
	return Parse(b)
}
