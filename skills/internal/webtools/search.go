package webtools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// Bounds of websearch.
const (
	defaultSearchCount = 5
	maxSearchCount     = 20
	maxSnippetRunes    = 400
)

// searcher is the websearch tool over a configured endpoint.
type searcher struct {
	c      Config
	client *http.Client
}

func newSearcher(c Config) *searcher {
	return &searcher{c: c, client: &http.Client{Timeout: c.Timeout.Duration}}
}

func (s *searcher) tool() skills.GoTool {
	return skills.GoTool{
		Tool: skills.Tool{
			Name:        "websearch",
			Description: "Search the web and return the top results: title, URL and a snippet of each. Use webfetch to read a result.",
			Parameters: skills.Parameters{Required: []string{"query"}, Properties: map[string]skills.Param{
				"query": {Type: skills.TypeString, Description: "What to search for"},
				"count": {Type: skills.TypeInteger, Description: fmt.Sprintf("How many results (default %d, at most %d)", defaultSearchCount, maxSearchCount)},
			}},
			Permissions: []string{skills.PermNetwork},
			Metadata:    map[string]string{"category": "web"},
		},
		Run: s.run,
	}
}

// result is one search hit in either format.
type result struct {
	Title, URL, Snippet string
}

func (s *searcher) run(ctx context.Context, args map[string]any) skills.Output {
	q, _ := args["query"].(string)
	if strings.TrimSpace(q) == "" || len(q) > 1000 {
		return skills.Failed(wire.ErrInvalidParams, "websearch: query must be 1 to 1000 bytes")
	}
	n := defaultSearchCount
	if f, ok := args["count"].(float64); ok {
		n = int(f)
	} else if i, ok := args["count"].(int64); ok {
		n = int(i)
	}
	n = max(1, min(n, maxSearchCount))
	u, err := url.Parse(s.c.SearchURL)
	if err != nil {
		return skills.Failed(wire.ErrInternal, fmt.Sprintf("websearch: search_url: %v", err))
	}
	v := u.Query()
	v.Set("q", q)
	if s.c.SearchFormat == FormatBrave {
		v.Set("count", fmt.Sprint(n))
	} else {
		v.Set("format", "json")
	}
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return skills.Failed(wire.ErrInternal, fmt.Sprintf("websearch: %v", err))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if s.c.SearchKeyEnv != "" {
		key := os.Getenv(s.c.SearchKeyEnv)
		if s.c.SearchFormat == FormatBrave {
			req.Header.Set("X-Subscription-Token", key)
		} else {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return searchFailure(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(s.c.MaxBytes)+1))
	if err != nil {
		return searchFailure(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		code := wire.ErrExecutionFailed
		if resp.StatusCode == http.StatusTooManyRequests {
			code = wire.ErrBusy
		}
		return skills.Failed(code, fmt.Sprintf("websearch: the search service answered %s: %s", resp.Status, snippet(body)))
	}
	if len(body) > s.c.MaxBytes {
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("websearch: the answer is larger than %d bytes", s.c.MaxBytes))
	}
	results, err := parseResults(s.c.SearchFormat, body)
	if err != nil {
		return skills.Failed(wire.ErrExecutionFailed, "websearch: "+err.Error())
	}
	if len(results) == 0 {
		return skills.Output{Content: []skills.Block{skills.TextBlock("no results for " + q)}}
	}
	var b strings.Builder
	for i, r := range results[:min(n, len(results))] {
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, oneLine(r.Title, 200), r.URL)
		if sn := oneLine(r.Snippet, maxSnippetRunes); sn != "" {
			fmt.Fprintf(&b, "   %s\n", sn)
		}
	}
	return skills.Output{Content: []skills.Block{skills.TextBlock(strings.TrimSuffix(b.String(), "\n"))}}
}

// parseResults reads a SearXNG (format=json) or Brave Search API answer.
func parseResults(format string, body []byte) ([]result, error) {
	var out []result
	switch format {
	case FormatBrave:
		var v struct {
			Web struct {
				Results []struct {
					Title       string `json:"title"`
					URL         string `json:"url"`
					Description string `json:"description"`
				} `json:"results"`
			} `json:"web"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("not a Brave Search API answer: %w", err)
		}
		for _, r := range v.Web.Results {
			out = append(out, result{r.Title, r.URL, r.Description})
		}
	default:
		var v struct {
			Results []struct {
				Title   string `json:"title"`
				URL     string `json:"url"`
				Content string `json:"content"`
			} `json:"results"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("not a SearXNG JSON answer (is format=json enabled on the instance?): %w", err)
		}
		for _, r := range v.Results {
			out = append(out, result{r.Title, r.URL, r.Content})
		}
	}
	return out, nil
}

func searchFailure(ctx context.Context, err error) skills.Output {
	out := failure(ctx, "", err)
	out.Content[0].Text = "websearch: " + strings.TrimPrefix(out.Content[0].Text, "webfetch : ")
	return out
}

// oneLine squeezes whitespace (and HTML tags some engines leave in
// snippets are kept as text) and cuts at max runes.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}
