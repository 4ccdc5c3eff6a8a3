// Command hostile is a misbehaving MCP server for the tests of package
// mcptools. It speaks JSON-RPC over stdio by hand, without the SDK, so that
// it can break the protocol's rules. Its first argument names the
// misbehaviour, the others are numbers for it:
//
//	tools N D       lists N tools, each with a description of D bytes, in one page
//	pages           lists 10 tools a page and always offers another page
//	fork S          a call starts "sleep S" and answers "ok"; the server ignores
//	                SIGTERM and the end of its input
//	meet DIR N      answers initialize only once N servers run: each leaves a
//	                file in DIR when it starts
//	image MIME DATA a call answers with an image block: type MIME, base64 DATA
//	flood           after initialisation it stops reading its input and sends
//	                requests (roots/list, ping) without end
//	crash N         answers N calls "ok", then exits
//	gens DIR        its Gth start, G counted in files it leaves in DIR: lists
//	                "t0" the first time, "t1" (another schema) the second,
//	                513 tools after that; a call answers "gen G", then it exits
//	flaky DIR A B   its Gth start, G counted in files it leaves in DIR: the
//	                listing fails when A <= G < B, else lists "t"; a call
//	                answers "gen G", then it exits
//	empty DIR A B   as flaky, but when A <= G < B it lists no tools and
//	                exits 100 ms later
//	spawn S         starts "sleep S" in its process group when it starts
//	big N           a call answers with a text of N bytes, its id last (as
//	                the official TypeScript SDK orders an answer)
//	endless         a call answers with a line that never ends
//	brief DIR MS    lists "t", leaves a file in DIR at each start and exits
//	                MS milliseconds after its listing, at every start
//	noise           before each answer writes lines that are no JSON-RPC
//	                message (a log line, a JSON object, a blank line) to its
//	                standard output, and ends the answer with spaces
//	broken          a call answers with a line of JSON that breaks off
//	die N MSG       writes N bytes of "x", a newline and MSG to its standard
//	                error and exits 3 before it reads anything
//	diecall MSG     a call writes MSG to its standard error and exits 4
//	notify DIR N K  says its tools changed (notifications/tools/list_changed)
//	                N times after initialisation, without end when N is 0;
//	                each listing leaves a file in DIR, and from the Kth on
//	                (when K > 0) it lists 513 tools
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

var (
	outMu sync.Mutex // guards out
	out   = bufio.NewWriter(os.Stdout)
	calls int // calls answered, for crash
	gen   int // the start of a gens server
)

func send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	outMu.Lock()
	defer outMu.Unlock()
	out.Write(b)
	out.WriteByte('\n')
	return out.Flush()
}

func reply(id json.RawMessage, result any) {
	send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func num(i int) int {
	if len(os.Args) <= i {
		return 0
	}
	n, err := strconv.Atoi(os.Args[i])
	if err != nil {
		panic(err)
	}
	return n
}

func tool(name, desc string) map[string]any {
	return map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}}
}

func text(s string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
}

func main() {
	mode := os.Args[1]
	if mode == "fork" {
		signal.Ignore(syscall.SIGTERM)
	}
	if mode == "gens" || mode == "flaky" || mode == "empty" || mode == "brief" {
		entries, err := os.ReadDir(os.Args[2])
		if err != nil {
			panic(err)
		}
		gen = len(entries)
		if err := os.WriteFile(fmt.Sprintf("%s/%d", os.Args[2], gen), nil, 0o600); err != nil {
			panic(err)
		}
	}
	if mode == "spawn" {
		if err := exec.Command("sleep", os.Args[2]).Start(); err != nil {
			panic(err)
		}
	}
	if mode == "meet" {
		if err := os.WriteFile(fmt.Sprintf("%s/%d", os.Args[2], os.Getpid()), nil, 0o600); err != nil {
			panic(err)
		}
	}
	if mode == "die" {
		fmt.Fprintf(os.Stderr, "%s\n%s\n", strings.Repeat("x", num(2)), os.Args[3])
		os.Exit(3)
	}
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			if mode == "fork" {
				for {
					time.Sleep(time.Hour)
				}
			}
			return
		}
		var m message
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			if mode == "meet" {
				meet(os.Args[2], num(3))
			}
			reply(m.ID, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{"listChanged": mode == "notify"}},
				"serverInfo": map[string]any{"name": "hostile", "version": "1"}})
		case "notifications/initialized":
			if mode == "flood" {
				flood()
			}
			if mode == "notify" {
				go notify(num(3))
			}
		case "tools/list":
			list(mode, m)
		case "tools/call":
			call(mode, m)
		default:
			if len(m.ID) > 0 {
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			}
		}
	}
}

func list(mode string, m message) {
	switch mode {
	case "tools":
		ts := make([]any, num(2))
		for i := range ts {
			ts[i] = tool(fmt.Sprintf("t%d", i), strings.Repeat("d", num(3)))
		}
		reply(m.ID, map[string]any{"tools": ts})
	case "pages":
		var p struct {
			Cursor string `json:"cursor"`
		}
		json.Unmarshal(m.Params, &p)
		page, _ := strconv.Atoi(p.Cursor)
		ts := make([]any, 10)
		for i := range ts {
			ts[i] = tool(fmt.Sprintf("p%d_%d", page, i), "a page's tool")
		}
		reply(m.ID, map[string]any{"tools": ts, "nextCursor": strconv.Itoa(page + 1)})
	case "gens":
		ts := []any{tool("t0", "the first start's")}
		switch {
		case gen == 1:
			t1 := tool("t1", "the second start's")
			t1["inputSchema"] = map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}
			ts = []any{t1}
		case gen > 1:
			ts = make([]any, 513)
			for i := range ts {
				ts[i] = tool(fmt.Sprintf("m%d", i), "one of too many")
			}
		}
		reply(m.ID, map[string]any{"tools": ts})
	case "flaky":
		if num(3) <= gen && gen < num(4) {
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32603, "message": fmt.Sprintf("not ready at start %d", gen)}})
			return
		}
		reply(m.ID, map[string]any{"tools": []any{tool("t", "a tool")}})
	case "brief":
		reply(m.ID, map[string]any{"tools": []any{tool("t", "a tool")}})
		time.AfterFunc(time.Duration(num(3))*time.Millisecond, func() { os.Exit(4) })
	case "notify":
		entries, err := os.ReadDir(os.Args[2])
		if err != nil {
			panic(err)
		}
		if err := os.WriteFile(fmt.Sprintf("%s/%d", os.Args[2], len(entries)), nil, 0o600); err != nil {
			panic(err)
		}
		if k := num(4); k > 0 && len(entries)+1 >= k {
			ts := make([]any, 513)
			for i := range ts {
				ts[i] = tool(fmt.Sprintf("m%d", i), "one of too many")
			}
			reply(m.ID, map[string]any{"tools": ts})
			return
		}
		reply(m.ID, map[string]any{"tools": []any{tool("t", "a tool")}})
	case "empty":
		if num(3) <= gen && gen < num(4) {
			reply(m.ID, map[string]any{"tools": []any{}})
			time.AfterFunc(100*time.Millisecond, func() { os.Exit(0) })
			return
		}
		reply(m.ID, map[string]any{"tools": []any{tool("t", "a tool")}})
	default:
		reply(m.ID, map[string]any{"tools": []any{tool("t", "a tool")}})
	}
}

func call(mode string, m message) {
	if mode == "image" {
		reply(m.ID, map[string]any{"content": []any{map[string]any{"type": "image", "mimeType": os.Args[2], "data": os.Args[3]}}})
		return
	}
	if mode == "big" {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, `{"result":{"content":[{"type":"text","text":"%s"}]},"jsonrpc":"2.0","id":%s}`+"\n", strings.Repeat("x", num(2)), m.ID)
		out.Flush()
		return
	}
	if mode == "endless" {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, m.ID)
		chunk := strings.Repeat("y", 64<<10)
		for {
			if _, err := out.WriteString(chunk); err != nil {
				os.Exit(0)
			}
		}
	}
	if mode == "diecall" {
		fmt.Fprintln(os.Stderr, os.Args[2])
		os.Exit(4)
	}
	if mode == "noise" || mode == "broken" {
		outMu.Lock()
		defer outMu.Unlock()
		if mode == "broken" {
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[`+"\n", m.ID)
		} else {
			fmt.Fprintf(out, "Debug: handling call %s\n{\"log\":\"call\"}\n\n  "+`{"jsonrpc":"2.0","id":%s,"result":%s}`+"  \n",
				m.ID, m.ID, `{"content":[{"type":"text","text":"ok"}]}`)
		}
		out.Flush()
		return
	}
	if mode == "gens" || mode == "flaky" || mode == "empty" {
		reply(m.ID, text(fmt.Sprintf("gen %d", gen)))
		os.Exit(3)
	}
	if mode == "crash" {
		reply(m.ID, text("ok"))
		if calls++; calls >= num(2) {
			os.Exit(3)
		}
		return
	}
	if mode != "fork" {
		reply(m.ID, text("ok"))
		return
	}
	c := exec.Command("sleep", os.Args[2])
	if err := c.Start(); err != nil {
		reply(m.ID, text("start: "+err.Error()))
		return
	}
	reply(m.ID, text("ok"))
}

// flood sends requests without end and never reads the answers.
func flood() {
	pad := strings.Repeat("p", 4096)
	for i := 1000; ; i += 2 {
		if send(map[string]any{"jsonrpc": "2.0", "id": i, "method": "roots/list", "params": map[string]any{"_meta": map[string]any{"pad": pad}}}) != nil {
			return
		}
		if send(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "ping"}) != nil {
			return
		}
	}
}

// meet waits until n servers have left their file in dir.
func meet(dir string, n int) {
	for {
		if entries, err := os.ReadDir(dir); err == nil && len(entries) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond) // polling another process's progress
	}
}

// notify says n times that the tools changed, without end when n is 0,
// until its output is closed.
func notify(n int) {
	for i := 0; n == 0 || i < n; i++ {
		if send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) != nil {
			return
		}
	}
}
