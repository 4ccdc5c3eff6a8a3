package sqlite

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// auditDoc is the operators' page whose schema section must match the code.
const auditDoc = "../../docs/AUDIT.md"

// docSchema parses the "## Schema (warm, version N)" section of the audit
// page: the version and, per table of its table, the documented columns
// (the first `name` of each comma-separated item of the columns cell;
// text in parentheses is commentary).
func docSchema(t *testing.T) (version int, tables map[string][]string) {
	t.Helper()
	b, err := os.ReadFile(auditDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	m := regexp.MustCompile(`(?m)^## Schema \(warm, version (\d+)\)$`).FindStringSubmatchIndex(doc)
	if m == nil {
		t.Fatalf("%s has no \"## Schema (warm, version N)\" heading", auditDoc)
	}
	version, _ = strconv.Atoi(doc[m[2]:m[3]])
	section := doc[m[1]:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	name := regexp.MustCompile("^`([a-z0-9_]+)`$")
	first := regexp.MustCompile("`([a-z0-9_]+)`")
	tables = map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 { // "", table, one row per, columns, ""
			continue
		}
		tm := name.FindStringSubmatch(strings.TrimSpace(cells[1]))
		if tm == nil {
			continue
		}
		var cols []string
		for _, item := range splitTopLevel(cells[3]) {
			if c := first.FindStringSubmatch(item); c != nil {
				cols = append(cols, c[1])
			}
		}
		tables[tm[1]] = cols
	}
	return version, tables
}

// splitTopLevel splits s at commas outside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// TestAuditDocMatchesSchema ties docs/AUDIT.md to the code: the schema
// version it names is the one this build migrates to, and it documents
// every table of a fresh database with exactly its columns (all but the
// integer row id "id").
func TestAuditDocMatchesSchema(t *testing.T) {
	t.Parallel()
	version, docTables := docSchema(t)
	if version != len(migrations) {
		t.Errorf("%s documents schema version %d, the code migrates to %d", auditDoc, version, len(migrations))
	}
	_, path := openStore(t, Options{})
	res, err := QueryReadOnly(context.Background(), path,
		"SELECT m.name, p.name FROM sqlite_schema m, pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid")
	if err != nil {
		t.Fatal(err)
	}
	dbTables := map[string][]string{}
	for _, r := range res.Rows {
		tbl, col := r[0].(string), r[1].(string)
		if col != "id" {
			dbTables[tbl] = append(dbTables[tbl], col)
		}
		if _, ok := dbTables[tbl]; !ok {
			dbTables[tbl] = nil
		}
	}
	for tbl, cols := range dbTables {
		doc, ok := docTables[tbl]
		if !ok {
			t.Errorf("table %s is not documented in %s", tbl, auditDoc)
			continue
		}
		if !slices.Equal(doc, cols) {
			t.Errorf("table %s: %s documents columns %v, the schema has %v", tbl, auditDoc, doc, cols)
		}
	}
	for tbl := range docTables {
		if _, ok := dbTables[tbl]; !ok {
			t.Errorf("%s documents table %s, which the schema does not have", auditDoc, tbl)
		}
	}
}
