package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
)

// notFound: a resolver without DNS answers another error than "no such
// host"; that one gets no hint.
func notFound(err error) bool {
	var dns *net.DNSError
	return errors.As(err, &dns) && dns.IsNotFound
}

// TestNetworkErrorSaysWhatToCheck: a completion that found no server at
// its address says what to check; other failures do not.
func TestNetworkErrorSaysWhatToCheck(t *testing.T) {
	const hint = "is the model server running, and is [llm] base_url right?"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, refused := http.Get("http://" + closed + "/v1/models")
	_, unknown := (&net.Resolver{}).LookupHost(context.Background(), "no-such-host.invalid")
	for _, tt := range []struct {
		name string
		err  *Error
		want bool
	}{
		{"connection refused", &Error{Kind: KindNetwork, Provider: "openai", Err: refused}, true},
		{"unknown host", &Error{Kind: KindNetwork, Provider: "openai", Err: unknown}, notFound(unknown)},
		{"connection reset", &Error{Kind: KindNetwork, Provider: "openai", Err: errors.New("read: connection reset by peer")}, false},
		{"a server error", &Error{Kind: KindServer, Provider: "openai", Status: 500, Err: refused}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Contains(tt.err.Error(), hint); got != tt.want {
				t.Fatalf("%q: hint %v, want %v", tt.err.Error(), got, tt.want)
			}
		})
	}
}
