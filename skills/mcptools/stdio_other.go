//go:build !unix

package mcptools

import (
	"context"
	"log/slog"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport runs a stdio MCP server. Without process groups it stops
// the server alone, not what the server started; its messages are bounded
// by the SDK's line limit (16 MiB), not by MaxResultBytes.
type stdioTransport struct {
	cmd    *exec.Cmd
	grace  time.Duration
	stall  time.Duration // not enforced on this platform
	groups *groupFile    // not recorded on this platform
	log    *slog.Logger  // unused: the SDK reads the server's output
}

// Connect starts the server.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := (&mcp.CommandTransport{Command: t.cmd, TerminateDuration: t.grace}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return guardLists(conn), nil
}

// lastWords is "": the SDK runs the server, and its standard error is not kept.
func (t *stdioTransport) lastWords(time.Duration) string { return "" }
