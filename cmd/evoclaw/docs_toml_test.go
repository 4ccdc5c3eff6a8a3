package main

import (
	"cmp"
	"encoding"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/skills"
)

// tomlBlock is a fenced TOML example of a Markdown file.
var tomlBlock = regexp.MustCompile("(?ms)^```toml\n(.*?)^```")

// TestDocsTOMLExamples: every TOML example in README.md and docs/ is a
// file evoclaw accepts as it stands: a skill.toml (it has a [skill]
// table), an agent.toml (it sets agent_id) or an evoclaw.toml, with no
// unknown key, wrong type or refused value, and with a login on any
// broker it names on another machine (remoteBrokerLogin). A renamed key,
// or an example edited by hand, fails here before a reader copies it.
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
					var c edge.Config
					if c, err = edge.LoadConfig(path); err == nil {
						err = remoteBrokerLogin(c.MQTT.Broker, c.MQTT.Username, c.MQTT.CertFile, "[mqtt]")
					}
				default:
					path := filepath.Join(dir, "evoclaw.toml")
					writeFile(t, path, body)
					var c orchestrator.Config
					if c, err = orchestrator.LoadConfig(path); err == nil {
						err = remoteBrokerLogin(c.Broker.URL, c.Broker.Username, c.Broker.CertFile, "[broker]")
					}
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

// remoteBrokerLogin is nil unless an example names a broker on another
// machine without a way to log in to it (a user name or a client
// certificate): evoclaw's embedded broker and the tested mosquitto setup
// refuse anonymous clients beyond loopback, so such an example, copied,
// is refused at start ("not Authorized"). Before, CLUSTER.md's nodes
// named the shared mosquitto and no user.
func remoteBrokerLogin(url, username, certFile, table string) error {
	if url == "" || username != "" || certFile != "" {
		return nil
	}
	host := url
	if _, rest, ok := strings.Cut(url, "://"); ok {
		host = rest
	}
	if h, _, _ := strings.Cut(host, ":"); h == "127.0.0.1" || h == "localhost" {
		return nil
	}
	return fmt.Errorf("the broker %s is on another machine, which refuses anonymous clients: the example needs %s username and password_env (or cert_file and key_file)", url, table)
}

// TestConfigKeysDocumented: every key evoclaw.toml and agent.toml accept
// is in docs/CONFIG.md's key tables (the [llm] keys may be in LLM.md's
// instead, and [[llm.fallback]] takes [llm]'s; a map of values, such as
// [[approvals.rules]] args, may be named by its own key), and every key
// those tables name is one its file accepts. Before, [audit] hot_capacity,
// retention_interval, [audit.retention] batch and the [delegation] keys
// were missing from the tables.
func TestConfigKeysDocumented(t *testing.T) {
	config, err := os.ReadFile(filepath.Join("..", "..", "docs", "CONFIG.md"))
	if err != nil {
		t.Fatal(err)
	}
	llmDoc, err := os.ReadFile(filepath.Join("..", "..", "docs", "LLM.md"))
	if err != nil {
		t.Fatal(err)
	}
	node, edgeSection, ok := strings.Cut(string(config), "\n## Edge agent")
	if !ok {
		t.Fatal(`docs/CONFIG.md has no "## Edge agent" section`)
	}
	code := map[string][]string{"evoclaw.toml": configKeys(reflect.TypeFor[orchestrator.Config]()),
		"agent.toml": configKeys(reflect.TypeFor[edge.Config]())}
	named, loose := docKeys(node)
	edgeNamed, edgeLoose := docKeys(edgeSection)
	for k := range edgeLoose {
		loose[k] = true
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(string(llmDoc), -1) {
		loose["llm."+m[1]] = true
	}
	if len(named) < 100 || len(edgeNamed) < 30 || len(code["evoclaw.toml"]) < 100 ||
		!named["loop.timeouts.*.default"] || !named["jobs.id"] || !edgeNamed["mqtt.broker"] {
		t.Fatalf("found %d keys in the orchestrator's table, %d in the agent's, %d in the code: the patterns no longer find them",
			len(named), len(edgeNamed), len(code["evoclaw.toml"]))
	}
	for file, keys := range code {
		for _, k := range keys {
			if !loose[k] && !loose[strings.Replace(k, "llm.fallback.", "llm.", 1)] && !loose[strings.TrimSuffix(k, ".*")] {
				t.Errorf("%s key %s is in no key table of docs/CONFIG.md (nor, for [llm], of docs/LLM.md)", file, k)
			}
		}
	}
	for file, doc := range map[string]map[string]bool{"evoclaw.toml": named, "agent.toml": edgeNamed} {
		for k := range doc {
			if !slices.ContainsFunc(code[file], func(c string) bool { return c == k || strings.HasPrefix(c, k+".") }) {
				t.Errorf("docs/CONFIG.md names %s for %s, which does not accept it", k, file)
			}
		}
	}
}

// configKeys lists the keys a configuration of type t accepts, dotted,
// with "*" for the name of a map's entry; the tables of an array are
// named as the array ([[jobs]] id is jobs.id).
func configKeys(t reflect.Type) []string {
	var keys []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		switch {
		case t.Kind() == reflect.Map:
			walk(t.Elem(), prefix+".*")
		case t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) && t != reflect.TypeFor[time.Time]():
			for i := range t.NumField() {
				f := t.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
				switch {
				case name == "-" || (!f.IsExported() && !f.Anonymous):
				case f.Anonymous && name == "":
					walk(f.Type, prefix)
				default:
					walk(f.Type, strings.TrimPrefix(prefix+"."+cmp.Or(name, strings.ToLower(f.Name)), "."))
				}
			}
		default:
			keys = append(keys, prefix)
		}
	}
	walk(t, "")
	return keys
}

// docKeys reads the "| key | default | meaning |" tables of a section of
// docs/CONFIG.md: named holds the keys their first column names (a
// table's header switches the table the bare keys after it are in, an
// upper-case name is a map entry's: [loop.timeouts.CATEGORY] default is
// loop.timeouts.*.default), loose also the keys any other column names in
// backquotes under the row's tables ([audit.cold] url's row lists the
// tier's other keys).
func docKeys(section string) (named, loose map[string]bool) {
	named, loose = map[string]bool{}, map[string]bool{}
	token := regexp.MustCompile("`([^`]+)`")
	header := regexp.MustCompile(`^\[\[?([A-Za-z_.]+)\]\]?\s*([A-Za-z_]*)`)
	in := false
	for line := range strings.Lines(section) {
		if strings.HasPrefix(line, "| key | default | meaning |") {
			in = true
			continue
		}
		if in = in && strings.HasPrefix(line, "|"); !in || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(line, " | ")
		table := ""
		var tables []string
		for _, m := range token.FindAllStringSubmatch(cells[0], -1) {
			key := m[1]
			if h := header.FindStringSubmatch(key); h != nil {
				table, key = h[1], h[2]
				tables = append(tables, table)
			}
			if key != "" {
				named[docKey(table, key)] = true
			}
		}
		for k := range named {
			loose[k] = true
		}
		for _, table := range tables {
			for _, m := range token.FindAllStringSubmatch(strings.Join(cells[1:], " | "), -1) {
				loose[docKey(table, m[1])] = true
			}
		}
	}
	return named, loose
}

// docKey is the dotted key of key in table, an upper-case part being a
// map entry's name.
func docKey(table, key string) string {
	parts := strings.Split(strings.Trim(table+"."+key, "."), ".")
	for i, p := range parts {
		if p == strings.ToUpper(p) {
			parts[i] = "*"
		}
	}
	return strings.Join(parts, ".")
}

// TestShippedSkillPermissionsDocumented: the sentence of docs/SKILLS.md
// saying which permissions the shipped skills use names each permission
// with exactly the tools that declare it, and the tools that need none.
// Before, it said `hw_read` guarded sensors and `sys_read` the system
// statistics, while the shipped cpu_temp, load and memory need nothing,
// disk needs file_read and no shipped tool declares sys_read: a reader
// granting sys_read gained nothing and missed file_read.
func TestShippedSkillPermissionsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "SKILLS.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)the shipped skills use (.*?) need none\\.").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/SKILLS.md has no sentence \"the shipped skills use ... need none.\"")
	}
	sentence := strings.Join(strings.Fields(string(m[1])), " ")
	names := func(list string) string {
		var n []string
		for _, w := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(list, -1) {
			n = append(n, w[1])
		}
		slices.Sort(n)
		return strings.Join(n, " ")
	}
	documented := map[string]string{} // permission ("" for none) -> its tools
	for _, g := range regexp.MustCompile("`([a-z_]+)` \\(([^)]*)\\)").FindAllStringSubmatch(sentence, -1) {
		documented[g[1]] = names(g[2])
	}
	if g := regexp.MustCompile(`their other tools \(([^)]*)\)$`).FindStringSubmatch(sentence); g != nil {
		documented[""] = names(g[1])
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "skills", "shipped", "*", "skill.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped skills: %v", err)
	}
	shipped := map[string][]string{}
	for _, f := range files {
		s, err := skills.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range s.Tools {
			if len(tool.Permissions) == 0 {
				shipped[""] = append(shipped[""], tool.Name)
			}
			for _, p := range tool.Permissions {
				shipped[p] = append(shipped[p], tool.Name)
			}
		}
	}
	want := map[string]string{}
	for p, tools := range shipped {
		slices.Sort(tools)
		want[p] = strings.Join(tools, " ")
	}
	if !reflect.DeepEqual(documented, want) {
		t.Errorf("docs/SKILLS.md says the shipped skills' permissions are (\"\" = none)\n  %q\nthe shipped skill.toml files declare\n  %q", documented, want)
	}
}
