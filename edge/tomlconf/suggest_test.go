package tomlconf

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// big is a configuration shaped like evoclaw's: nested tables, a map of
// tables, an array of tables, an embedded struct, a duration and more
// keys than an error lists.
type big struct {
	NodeID  string `toml:"node_id"`
	DataDir string `toml:"data_dir"`
	HTTP    struct {
		Listen   string `toml:"listen"`
		TokenEnv string `toml:"token_env"`
	} `toml:"http"`
	Broker struct {
		tlsPart
		URL  string        `toml:"url"`
		Wait time.Duration `toml:"wait"`
	} `toml:"broker"`
	Servers map[string]struct {
		Command string   `toml:"command"`
		Args    []string `toml:"args"`
	} `toml:"servers"`
	Jobs []struct {
		ID     string `toml:"id"`
		Prompt string `toml:"prompt"`
	} `toml:"jobs"`
	Loop struct {
		Timeout Duration `toml:"timeout"`
		A       int      `toml:"a1"`
		B       int      `toml:"b2"`
		C       int      `toml:"c3"`
		D       int      `toml:"d4"`
		E       int      `toml:"e5"`
		F       int      `toml:"f6"`
		G       int      `toml:"g7"`
		H       int      `toml:"h8"`
		I       int      `toml:"i9"`
		J       int      `toml:"j10"`
		K       int      `toml:"k11"`
		L       int      `toml:"l12"`
	} `toml:"loop"`
	Plain struct{ Name string }
}

type tlsPart struct {
	CAFile string `toml:"ca_file"`
}

// TestUnknownKeyHints: an unknown key is named once, with the key of its
// table it most likely meant, or the table's keys when the table is small
// and none is near. Before, a typo ("[htp]") was named with every key
// under it and nothing said what to write instead.
func TestUnknownKeyHints(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
		not       []string
	}{
		{"table", "[htp]\nlisten = \"x\"\ntoken_env = \"T\"\n", []string{"unknown keys: htp (did you mean http?);"}, []string{"htp.listen"}},
		{"nested", "[http]\nlissten = \"x\"\n", []string{"http.lissten (did you mean listen?)"}, nil},
		{"top", "node_idd = \"x\"\n", []string{"node_idd (did you mean node_id?)"}, nil},
		{"embedded", "[broker]\nca_fil = \"x\"\n", []string{"broker.ca_fil (did you mean ca_file?)"}, nil},
		{"map of tables", "[servers.fs]\ncommand = \"x\"\nargz = [\"a\"]\n", []string{"servers.fs.argz (did you mean args?)"}, nil},
		{"array of tables", "[[jobs]]\nid = \"a\"\nprmpt = \"x\"\n", []string{"jobs.prmpt (did you mean prompt?)"}, nil},
		{"small table", "[http]\nzzzzzz = 1\n", []string{"http.zzzzzz (known here: listen, token_env)"}, nil},
		{"large table", "[loop]\nzzzzzz = 1\n", []string{"loop.zzzzzz;"}, []string{"known here", "did you mean"}},
		{"under a duration", "[loop.timeout]\nx = 1\n", nil, nil},
		{"untagged field", "[plain]\nnme = \"x\"\n", []string{"plain.nme (did you mean name?)"}, nil},
		{"two", "dat_dir = \"d\"\n[http]\nlisten = \"x\"\ntokn_env = \"T\"\n", []string{"dat_dir (did you mean data_dir?), http.tokn_env (did you mean token_env?); every key is in docs/CONFIG.md"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeFile(write(t, tt.src), &big{})
			if err == nil {
				t.Fatal("decoded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error holds %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestUnknownKeysBounded: a file of many long unknown keys gets an error
// that names a few, cut, and counts the rest.
func TestUnknownKeysBounded(t *testing.T) {
	var b strings.Builder
	long := strings.Repeat("k", 5000)
	for i := range 1000 {
		fmt.Fprintf(&b, "%s%d = 1\n", long, i)
	}
	err := Decode(b.String(), &big{})
	if err == nil {
		t.Fatal("decoded")
	}
	if n := len(err.Error()); n > (maxKeyText+100)*maxNamedKeys {
		t.Errorf("error of %d bytes for 1000 keys of 5000 bytes", n)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("and %d more", 1000-maxNamedKeys)) {
		t.Errorf("error does not count the keys it leaves out: %.300s", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{"[htp]\nlisten = 1\n", "[[jobs]]\nprmpt = 2\n", "[servers.a]\nargz = []\n", "a.b.c.d = 1\n", "[loop.timeout]\nx = 1\n", "[broker]\nwait = 5\n", "node_id = 5\n", "[[jobs]]\nid = [1]\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		err := Decode(src, &big{})
		if err != nil && strings.HasPrefix(err.Error(), "unknown keys: ") && !strings.Contains(err.Error(), "docs/CONFIG.md") {
			t.Fatalf("unknown keys without the pointer: %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "incompatible types") {
			t.Fatalf("a wrong type in the decoder's words: %v", err)
		}
	})
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"abc", "abc", 0}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"dri", "dir", 1}, {"ab", "ba", 1}, {"listen", "lissten", 1}, {"ca", "abc", 3}} {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
