//go:build !nocluster

package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestRemoteAPIIsBounded: another node's requests about questions and
// approvals are carried out at most maxRemoteOps at once; one more is
// answered 503 at once (not queued without bound, not answered "not
// found", which would send the person a wrong 404). Malformed requests
// get no answer.
func TestRemoteAPIIsBounded(t *testing.T) {
	if strconv.IntSize == 32 {
		// protoactor's registry panics on half of all future ids there.
		t.Skip("clustering is refused on 32-bit builds (cluster.ErrNot64Bit); the remote API never runs there")
	}
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	release := make(chan struct{})
	started := make(chan string, maxRemoteOps+1)
	pid := sys.Root.Spawn(remoteAPIProps("n1", slog.New(slog.DiscardHandler), func(ctx context.Context, op remoteOp) remoteResult {
		started <- op.ID
		select {
		case <-release:
		case <-ctx.Done():
		}
		return remoteResult{Found: true, Status: http.StatusNoContent}
	}))
	ask := func(body []byte, timeout time.Duration) *actor.Future {
		return sys.Root.RequestFuture(pid, wrapperspb.Bytes(body), timeout)
	}
	op := func(id string) []byte {
		b, err := json.Marshal(remoteOp{Op: remoteAnswer, ID: id, Answer: "yes"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var held []*actor.Future
	for i := range maxRemoteOps {
		held = append(held, ask(op(fmt.Sprint("q", i)), 10*time.Second))
	}
	for range maxRemoteOps {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the first requests were not carried out")
		}
	}
	reply, err := ask(op("one-more"), 10*time.Second).Result()
	if err != nil {
		t.Fatalf("a request beyond the bound: %v, want an answer at once", err)
	}
	var res remoteResult
	if err := json.Unmarshal(reply.(*wrapperspb.BytesValue).Value, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Found || res.Status != http.StatusServiceUnavailable || res.Node != "n1" {
		t.Fatalf("a request beyond the bound: %+v, want found, 503, node n1", res)
	}
	select {
	case id := <-started:
		t.Fatalf("request %s carried out beyond the bound", id)
	default:
	}
	close(release)
	for i, f := range held {
		reply, err := f.Result()
		if err != nil {
			t.Fatalf("held request %d: %v", i, err)
		}
		if err := json.Unmarshal(reply.(*wrapperspb.BytesValue).Value, &res); err != nil || res.Status != http.StatusNoContent || res.Node != "n1" {
			t.Fatalf("held request %d: %+v (%v)", i, res, err)
		}
	}
	for _, bad := range [][]byte{[]byte("{"), []byte(`{"op":"question_answer"}`), op(string(make([]byte, 200)))} {
		if _, err := ask(bad, 200*time.Millisecond).Result(); err == nil {
			t.Errorf("malformed request %.40q was answered", bad)
		}
	}
}
