package cold

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
)

// A refused token is logged as a failure, and the token itself appears in
// no log line; Close leaves no goroutine of the shipper behind.
func TestShipperLogsNoTokenAndLeavesNoGoroutine(t *testing.T) {
	pub, _ := sqldtest.NewKey(t)
	srv := sqldtest.Start(t, sqldtest.Options{JWTKey: pub})
	_, otherKey := sqldtest.NewKey(t)
	token := sqldtest.Token(t, otherKey, map[string]any{"a": "rw"})
	warm, _ := openWarm(t)
	fill(t, warm, 1)
	c := openCold(t, srv.URL(), token)

	before := runtime.NumGoroutine()
	var logs testenv.Buffer
	sh := NewShipper(warm, c, logs.Logger(slog.LevelDebug))
	if err := sh.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() bool { return strings.Contains(logs.String(), "cold shipping failed") }, "a logged failure")
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), strings.Split(token, ".")[2]) {
		t.Fatalf("the token appears in the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "401") {
		t.Errorf("the log does not say the server refused the token:\n%s", logs.String())
	}
	testenv.Eventually(t, 60*time.Second, func() bool {
		// Idle keep-alive connections of the client library's HTTP
		// client have goroutines of their own; they are not the shipper's.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		return runtime.NumGoroutine() <= before
	}, "the shipper's goroutines to exit")
}
