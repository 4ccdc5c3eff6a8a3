package webtools

import (
	"net/http"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestWebfetchURLLength: a URL past MaxURLBytes is refused before it is
// asked, and so is a redirect to one.
func TestWebfetchURLLength(t *testing.T) {
	srv, hits := server(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/"+strings.Repeat("r", MaxURLBytes), http.StatusFound)
	})
	tool := fetchTool(t, Config{AllowNetworks: []string{"127.0.0.1/32"}}, nil)
	out := fetch(t, tool, srv.URL+"/"+strings.Repeat("p", MaxURLBytes))
	if out.ErrorType() != wire.ErrInvalidParams || !strings.Contains(out.ErrorText(), "longer than") || hits.Load() != 0 {
		t.Fatalf("long URL = %s %q after %d requests", out.ErrorType(), out.ErrorText(), hits.Load())
	}
	out = fetch(t, tool, srv.URL+"/start")
	if out.ErrorType() == "" || !strings.Contains(out.ErrorText(), "longer than") || hits.Load() != 1 {
		t.Fatalf("redirect to a long URL = %s %q after %d requests", out.ErrorType(), out.ErrorText(), hits.Load())
	}
}
