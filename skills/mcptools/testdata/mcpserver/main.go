// Command mcpserver is a small MCP server for the tests of package
// mcptools: over stdio by default, or over streamable HTTP on a loopback
// port with -http (it prints "listening on URL" once it accepts). With
// -changing it offers only "v0" and "next" instead, and a call of "next"
// replaces the tool vN by vN+1, which the SDK tells the client
// (notifications/tools/list_changed).
package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// png1x1 is a one-pixel PNG.
const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

type addIn struct {
	A float64 `json:"a" jsonschema:"first addend"`
	B float64 `json:"b" jsonschema:"second addend"`
}

type echoIn struct {
	Text string `json:"text" jsonschema:"text to echo"`
}

func server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "v1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers"},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the sensor is unplugged"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Returns a one-pixel PNG"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			b, _ := base64.StdEncoding.DecodeString(png1x1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: b, MIMEType: "image/png"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Blocks until cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "bad.name", Description: "A name evoclaw cannot offer"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	return s
}

// changing is the server of -changing.
func changing() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "v1.0.0"}, nil)
	answer := func(text string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		}
	}
	schema := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "v0", Description: "The first version", InputSchema: schema}, answer("v0"))
	var (
		mu  sync.Mutex // guards gen
		gen int
	)
	s.AddTool(&mcp.Tool{Name: "next", Description: "Replaces vN by vN+1", InputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			gen++
			name := fmt.Sprintf("v%d", gen)
			s.RemoveTools(fmt.Sprintf("v%d", gen-1))
			s.AddTool(&mcp.Tool{Name: name, Description: "Version " + name, InputSchema: schema}, answer(name))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "now " + name}}}, nil
		})
	return s
}

func main() {
	httpMode := flag.Bool("http", false, "serve streamable HTTP on a loopback port instead of stdio")
	changingMode := flag.Bool("changing", false, "offer tools that change when \"next\" is called")
	flag.Parse()
	if *changingMode {
		if err := changing().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	if !*httpMode {
		if err := server().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	s := server()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	fmt.Fprintf(os.Stdout, "listening on http://%s/mcp\n", l.Addr())
	log.Fatal(http.Serve(l, h))
}
