package orchestrator

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestLargeBodiesShareABudget: the bodies over 64 KiB that handlers read
// and decode at once are bounded: one that finds no share free within the
// wait is refused 429 instead of read; a chat gives its share back once
// its body is decoded, so a chat that then waits on its model keeps no
// other body out. Before, every connection read and decoded its body at
// once: 100 chat completions of 4 MiB took a node from 40 MB to 1.1 GB.
func TestLargeBodiesShareABudget(t *testing.T) {
	called := make(chan struct{}, 8)
	prov := funcProvider(func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		called <- struct{}{}
		<-ctx.Done() // the chat runs until the test ends
		return llm.Response{}, ctx.Err()
	})
	limits := httpLimits{BodyBytes: 300 << 10, BodyWait: 500 * time.Millisecond, Body: 20 * time.Second}
	node, _, token := startAPI(t, nil, Options{Provider: prov, httpLimits: limits})
	addr := node.HTTPAddr()
	const size = 200 << 10 // two do not fit in 300 KiB
	body := `{"text":"` + strings.Repeat("a", size-len(`{"text":""}`)) + `"}`
	head := fmt.Sprintf("POST /v1/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", token, size)
	wantCalled := func(what string) {
		t.Helper()
		select {
		case <-called:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the chat did not reach the model", what)
		}
	}

	// Two bodies that stall after their first bytes: one holds its share
	// while it waits for the rest, the other is refused.
	conns := []net.Conn{dial(t, addr), dial(t, addr)}
	type answer struct {
		i    int
		resp *http.Response
		err  error
	}
	answers := make(chan answer, 2)
	for i, c := range conns {
		fmt.Fprint(c, head+body[:10])
		go func() {
			c.SetReadDeadline(time.Now().Add(limits.BodyWait + time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			answers <- answer{i, resp, err}
		}()
	}
	holder, refused := -1, 0
	for range conns {
		a := <-answers
		if a.err != nil {
			holder = a.i // still reading its body: no answer
			continue
		}
		refused++
		var e errorBody
		decodeBody(t, a.resp, &e)
		if a.resp.StatusCode != 429 || e.Error.Type != ErrTypeBusy || a.resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(e.Error.Message, "bodies") {
			t.Fatalf("the body without a share: %s %+v; want 429 %s with Retry-After", a.resp.Status, e.Error, ErrTypeBusy)
		}
	}
	if holder < 0 || refused != 1 {
		t.Fatalf("%d of the two stalled bodies refused; want one, the other holding its share while it waits for the rest", refused)
	}
	c := conns[holder]
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprint(c, body[10:]); err != nil {
		t.Fatal(err)
	}
	wantCalled("the body that held a share")

	// That chat runs on (its model does not answer), and holds no share:
	// another large body is read and runs too.
	resp := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/v1/chat", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		r, err := http.DefaultClient.Do(req)
		if err == nil {
			err = fmt.Errorf("answered %s while its model does not answer", r.Status)
			r.Body.Close()
		}
		resp <- err
	}()
	select {
	case <-called:
	case err := <-resp:
		t.Fatalf("a large body while another chat runs: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("a large body while another chat runs did not reach the model")
	}
}
