package main

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator"
)

// bombSize is what a crafted tree object declares: far past the memory a
// git call may take (256 MiB at most), and a few GB of the node's memory
// when read whole, as go-git does.
const bombSize = 512 << 20

// bombTree names the crafted tree; go-git does not check that a name is
// the hash of its object before reading it.
const bombTree = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0"

// TestGitToolsCannotTakeTheNodesMemory: a repository whose HEAD tree is an
// object that inflates to 512 MiB (a loose object of 2 MB; a whole
// object in a pack; a 24 KB delta in a pack) does not take the node's
// memory: git_status and git_diff fail saying the repository needs more
// memory than a git call may use, the node's peak memory stays where it
// was, and an ordinary repository is answered as before. Before git calls
// ran in a child under a memory bound, each call took the node to 2 GB.
func TestGitToolsCannotTakeTheNodesMemory(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	plain := gitRepo(t, filepath.Join(dir, "plain"), "")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(plain, filepath.Join(ws, ".git")); err != nil {
		t.Fatal(err)
	}
	transcript := `{"name":"git","turns":[{"content":"looking","tool_calls":[` +
		`{"id":"s","name":"git_status","arguments":{}},{"id":"d","name":"git_diff","arguments":{"staged":true}}]},{"content":"done"}]}`
	serve, _ := startScriptedServeProc(t, dir, "gitbomb-test", transcript,
		fmt.Sprintf("[skills]\npermissions = [\"git\"]\n[builtin]\ngroups = [\"git\"]\nworkspace = %q\n[tools]\ndefault_timeout = \"120s\"\n", ws))
	data := filepath.Join(dir, "node")
	base := strings.TrimSpace(readTestFile(t, filepath.Join(data, orchestrator.HTTPAddrFile)))
	token := strings.TrimSpace(readTestFile(t, filepath.Join(data, orchestrator.HTTPTokenFile)))
	chat := func() orchestrator.ChatResponse {
		t.Helper()
		var out orchestrator.ChatResponse
		if code := apiJSON(t, http.MethodPost, base+"/v1/chat", token, orchestrator.ChatRequest{Text: "go"}, &out); code != http.StatusOK || len(out.Calls) != 2 {
			t.Fatalf("chat: %d %+v", code, out)
		}
		return out
	}
	before := peakKB(t, serve.cmd.Process.Pid)

	for _, kind := range []string{"loose", "pack", "delta"} {
		t.Run(kind, func(t *testing.T) {
			// The bomb takes the workspace's .git: a model that may write
			// files can put one there.
			if err := os.Rename(filepath.Join(ws, ".git"), filepath.Join(dir, "was-"+kind)); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(gitRepo(t, filepath.Join(dir, kind), kind), filepath.Join(ws, ".git")); err != nil {
				t.Fatal(err)
			}
			for _, c := range chat().Calls {
				if c.Success || !strings.Contains(c.Error, "needs more memory than") {
					t.Errorf("%s over a %s bomb: %+v; want a failure saying it needs more memory", c.Tool, kind, c)
				}
			}
		})
	}
	if grew := peakKB(t, serve.cmd.Process.Pid) - before; grew > 64<<10 {
		t.Fatalf("the node's peak memory grew by %d MiB", grew>>10)
	}

	if err := os.Rename(filepath.Join(ws, ".git"), filepath.Join(dir, "was-last")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "was-loose"), filepath.Join(ws, ".git")); err != nil {
		t.Fatal(err)
	}
	out := chat()
	if s, d := out.Calls[0], out.Calls[1]; !s.Success || s.Result != "on branch main\nnothing to commit, working tree clean" || !d.Success || d.Result != "no changes" {
		t.Fatalf("an ordinary repository: %+v", out.Calls)
	}
}

// peakKB is the peak resident memory of process pid (VmHWM), in kB.
func peakKB(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// gitRepo writes a repository's .git directory at dir, with branch main
// at a commit whose tree is empty (bomb "") or bombTree, a tree object of
// bombSize zero bytes written as bomb says: a loose object, a whole
// object in a pack, or a delta in a pack against a tree of 64 KiB.
func gitRepo(t *testing.T, dir, bomb string) string {
	t.Helper()
	put := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loose := func(name string, deflated []byte) { put("objects/"+name[:2]+"/"+name[2:], deflated) }
	object := func(typ, body string) string {
		raw := fmt.Sprintf("%s %d\x00%s", typ, len(body), body)
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write([]byte(raw))
		w.Close()
		sum := sha1.Sum([]byte(raw))
		name := hex.EncodeToString(sum[:])
		loose(name, z.Bytes())
		return name
	}
	tree := object("tree", "")
	header := []byte(fmt.Sprintf("tree %d\x00", bombSize))
	switch bomb {
	case "":
	case "loose":
		loose(bombTree, zlibZeros(header, bombSize))
		tree = bombTree
	case "pack":
		whole := zlibZeros(nil, bombSize)
		writePack(t, dir, []packEntry{{bombTree, append(packHeader(2, bombSize), whole...)}})
		tree = bombTree
	case "delta":
		const baseSize = 1 << 16
		base := zlibZeros(nil, baseSize)
		// Each 0x80 copies 64 KiB from offset 0 of the base.
		delta := append(append(varint(baseSize), varint(bombSize)...), bytes.Repeat([]byte{0x80}, bombSize/baseSize)...)
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(delta)
		w.Close()
		baseEntry := append(packHeader(2, baseSize), base...)
		// OFS_DELTA (6) whose base starts len(baseEntry) bytes before it.
		deltaEntry := append(append(packHeader(6, len(delta)), baseOffset(len(baseEntry))...), z.Bytes()...)
		writePack(t, dir, []packEntry{{strings.Repeat("a0", 20), baseEntry}, {bombTree, deltaEntry}})
		tree = bombTree
	default:
		t.Fatalf("bomb %q", bomb)
	}
	commit := object("commit", "tree "+tree+"\nauthor t <t@t> 1 +0000\ncommitter t <t@t> 1 +0000\n\none\n")
	put("refs/heads/main", []byte(commit+"\n"))
	put("HEAD", []byte("ref: refs/heads/main\n"))
	put("config", []byte("[core]\n\trepositoryformatversion = 0\n\tbare = false\n"))
	return dir
}

// zlibZeros is a zlib stream of prefix then n zero bytes (n a multiple of
// 1 MiB or less than it), made without compressing them all: the deflate
// blocks of one MiB, ended by a flush, are repeated (they refer to nothing
// before them), the checksum is extended arithmetically.
func zlibZeros(prefix []byte, n int) []byte {
	block := func(p []byte) []byte {
		var b bytes.Buffer
		w, _ := flate.NewWriter(&b, flate.BestCompression)
		w.Write(p)
		w.Flush()
		return b.Bytes()
	}
	out := append([]byte{0x78, 0xda}, block(prefix)...)
	mib := block(make([]byte, min(n, 1<<20)))
	for range max(n>>20, 1) {
		out = append(out, mib...)
	}
	out = append(out, 0x03, 0x00) // the final block, empty
	a := adler32.Checksum(prefix)
	s1, s2 := uint64(a&0xffff), uint64(a>>16)
	s2 = (s2 + s1*uint64(n)) % 65521 // each zero adds s1 to s2
	return binary.BigEndian.AppendUint32(out, uint32(s2<<16|s1))
}

type packEntry struct {
	name  string
	entry []byte // header and data as the pack holds them
}

// writePack writes a version 2 pack of entries and its index.
func writePack(t *testing.T, dir string, entries []packEntry) {
	t.Helper()
	pack := append([]byte("PACK"), binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 2), uint32(len(entries)))...)
	offsets := map[string]int{}
	for _, e := range entries {
		offsets[e.name] = len(pack)
		pack = append(pack, e.entry...)
	}
	sum := sha1.Sum(pack)
	pack = append(pack, sum[:]...)
	// Index version 2; the names are in order already.
	idx := append([]byte("\377tOc"), 0, 0, 0, 2)
	for b := range 256 {
		n := 0
		for _, e := range entries {
			if first, _ := hex.DecodeString(e.name[:2]); int(first[0]) <= b {
				n++
			}
		}
		idx = binary.BigEndian.AppendUint32(idx, uint32(n))
	}
	for _, e := range entries {
		h, _ := hex.DecodeString(e.name)
		idx = append(idx, h...)
	}
	for _, e := range entries {
		idx = binary.BigEndian.AppendUint32(idx, crc32.ChecksumIEEE(e.entry))
	}
	for _, e := range entries {
		idx = binary.BigEndian.AppendUint32(idx, uint32(offsets[e.name]))
	}
	idx = append(idx, sum[:]...)
	isum := sha1.Sum(idx)
	idx = append(idx, isum[:]...)
	name := filepath.Join(dir, "objects", "pack", "pack-"+hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name+".pack", pack, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name+".idx", idx, 0o644); err != nil {
		t.Fatal(err)
	}
}

// packHeader is a pack entry's type and size header.
func packHeader(typ, n int) []byte {
	b := []byte{byte(typ<<4 | n&0x0f)}
	for n >>= 4; n > 0; n >>= 7 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(n&0x7f))
	}
	return b
}

// baseOffset is how far back an OFS_DELTA's base starts: 7 bits a byte,
// most significant first, each byte but the last one less than it says.
func baseOffset(n int) []byte {
	b := []byte{byte(n & 0x7f)}
	for n >>= 7; n > 0; n >>= 7 {
		n--
		b = append([]byte{byte(n&0x7f) | 0x80}, b...)
	}
	return b
}

// varint is a delta's size: 7 bits a byte, least significant first.
func varint(n int) []byte {
	var b []byte
	for ; n >= 0x80; n >>= 7 {
		b = append(b, byte(n)|0x80)
	}
	return append(b, byte(n))
}
