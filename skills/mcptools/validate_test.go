package mcptools

import (
	"strings"
	"testing"
)

func TestValidateServers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers map[string]ServerConfig
		want    []string // substrings, one per error
	}{
		{"none", nil, nil},
		{"stdio and http", map[string]ServerConfig{"fs": {Command: "mcp-fs"}, "web": {URL: "http://127.0.0.1:9/mcp"}}, nil},
		{"neither", map[string]ServerConfig{"x": {Args: []string{"-v"}}}, []string{"tools.mcp_servers.x: set exactly one of command and url"}},
		{"both", map[string]ServerConfig{"y": {Command: "a", URL: "http://b"}}, []string{"tools.mcp_servers.y: set exactly one"}},
		// "a___x" would be the tool "_x" of "a" and the tool "x" of "a_".
		{"name ending with _", map[string]ServerConfig{"a": {Command: "a"}, "a_": {Command: "a"}},
			[]string{`tools.mcp_servers."a_": a server name must be non-empty, must not contain "__" and must not end with '_'`}},
		{"name with the separator", map[string]ServerConfig{"a__b": {Command: "a"}}, []string{`tools.mcp_servers."a__b": a server name`}},
		{"empty name", map[string]ServerConfig{"": {Command: "a"}}, []string{`tools.mcp_servers."": a server name`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateServers("tools.mcp_servers", tc.servers)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d", errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %q, want it to mention %q", errs[i], w)
				}
			}
		})
	}
}
