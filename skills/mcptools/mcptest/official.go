// Package mcptest finds the official reference MCP servers (installed from
// npm by .ci/run into the project's .peers/ folder) for tests that run
// them as outside peers over stdio.
//
// A missing server, or a missing node, skips the test loudly, or fails it
// when EVOCLAW_REQUIRE_PEERS=1.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package mcptest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/skills/mcptools"
)

// Server names an official MCP server package and the environment
// variable that may give the path of its entry script.
type Server struct {
	Package string // npm package, "@modelcontextprotocol/server-everything"
	Env     string // variable holding the path of its dist/index.js
}

// The official servers the tests run; both work offline.
var (
	Everything = Server{Package: "@modelcontextprotocol/server-everything", Env: "EVOCLAW_MCP_EVERYTHING"}
	Filesystem = Server{Package: "@modelcontextprotocol/server-filesystem", Env: "EVOCLAW_MCP_FILESYSTEM"}
)

// Config returns the stdio configuration that runs s with node and args,
// with timeoutMS per call. It skips the test (fails it when peers are
// required) when node or s is not installed.
func Config(t testing.TB, s Server, timeoutMS int64, args ...string) mcptools.ServerConfig {
	t.Helper()
	node, ok := testenv.Lookup("node")
	if !ok {
		testenv.Missing(t, t.Skipf, "node", "apt-get install nodejs")
	}
	script := os.Getenv(s.Env)
	if script == "" {
		script = findInPeers(s.Package)
	}
	if _, err := os.Stat(script); script == "" || err != nil {
		testenv.Missing(t, t.Skipf, s.Package, ".ci/run installs it into .peers/ with npm, or set "+s.Env+" to its dist/index.js")
	}
	return mcptools.ServerConfig{Command: node, Args: append([]string{script}, args...), TimeoutMS: timeoutMS}
}

// findInPeers looks for pkg in the .peers/ folder of the module the test
// runs in: the nearest directory above the working directory with go.mod.
func findInPeers(pkg string) string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".peers", "node_modules", filepath.FromSlash(pkg), "dist", "index.js")
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}
