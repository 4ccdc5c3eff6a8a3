// Package webtools provides the design's web tools: webfetch, which GETs
// a URL and returns its page as Markdown, and websearch, which asks a
// configured search service (SearXNG or the Brave Search API).
//
// # Network policy
//
// webfetch may reach only public addresses: loopback, private, link-local,
// unique-local, CGNAT, multicast and unspecified addresses are denied
// unless Config.AllowNetworks names them, and when Config.AllowHosts is
// set only those hosts may be asked. The host check runs on the URL and on
// every redirect; the address check runs when each connection is dialled,
// on the address actually dialled (net.Dialer.Control), so a name that
// resolves to a public address when checked and to a private one when
// used (DNS rebinding) gains nothing. Proxies from the environment are not
// used: they would dial on webfetch's behalf, past the check.
//
// websearch talks only to the endpoint the operator configured, which may
// be on the local network (a SearXNG instance); the policy does not apply
// to it.
//
// # Concurrency
//
// The tools are safe for concurrent use.
package webtools

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/edge/defaults"
	"github.com/evoclaw/evoclaw/edge/tomlconf"
	"github.com/evoclaw/evoclaw/skills"
)

// Defaults of Config.
const (
	// DefaultMaxBytes is the most of a response body read.
	DefaultMaxBytes = 2 << 20
	// DefaultMaxChars is the most text webfetch returns.
	DefaultMaxChars = 100_000
	// DefaultTimeout bounds one fetch or search, body included.
	DefaultTimeout = 20 * time.Second
	// DefaultMaxRedirects is how many redirects webfetch follows.
	DefaultMaxRedirects = 5
)

// Search formats of Config.SearchFormat.
const (
	FormatSearXNG = "searxng"
	FormatBrave   = "brave"
)

// Config is the [builtin.web] table. The zero value fetches any public
// address and offers no search.
type Config struct {
	// AllowHosts, when set, are the only hosts webfetch asks: exact names
	// ("example.com") or a leading wildcard ("*.example.org", which also
	// matches example.org). Empty: any host.
	AllowHosts []string `toml:"allow_hosts"`
	// AllowNetworks are CIDR prefixes ("192.168.1.0/24", "127.0.0.1/32")
	// webfetch may reach although they are not public.
	AllowNetworks []string `toml:"allow_networks"`
	// MaxBytes is the most of a response body read (default 2 MiB); a
	// larger body is cut there and the result marked truncated.
	MaxBytes int `toml:"max_bytes"`
	// MaxChars is the most text returned (default 100000).
	MaxChars int `toml:"max_chars"`
	// Timeout bounds one call, body included (default 20 s).
	Timeout tomlconf.Duration `toml:"timeout"`
	// SearchURL is the search endpoint: a SearXNG /search URL, or
	// https://api.search.brave.com/res/v1/web/search. Empty: no websearch.
	SearchURL string `toml:"search_url"`
	// SearchFormat is "searxng" (default) or "brave".
	SearchFormat string `toml:"search_format"`
	// SearchKeyEnv names the environment variable holding the API key
	// (Brave's X-Subscription-Token); keys never live in the file.
	SearchKeyEnv string `toml:"search_key_env"`
}

// Validate fills defaults and returns every problem, each naming its key
// under prefix ("builtin.web").
func (c *Config) Validate(prefix string) []error {
	var errs []error
	for _, n := range c.AllowNetworks {
		if _, err := netip.ParsePrefix(n); err != nil {
			errs = append(errs, fmt.Errorf("%s.allow_networks: %q is not a CIDR prefix: %v", prefix, n, err))
		}
	}
	for _, h := range c.AllowHosts {
		if h == "" || strings.ContainsAny(h, "/: ") || strings.Contains(strings.TrimPrefix(h, "*."), "*") {
			errs = append(errs, fmt.Errorf("%s.allow_hosts: %q is not a host name or *.domain", prefix, h))
		}
	}
	defaults.Positive(&c.MaxBytes, DefaultMaxBytes)
	defaults.Positive(&c.MaxChars, DefaultMaxChars)
	defaults.Positive(&c.Timeout.Duration, DefaultTimeout)
	switch c.SearchFormat {
	case "":
		c.SearchFormat = FormatSearXNG
	case FormatSearXNG, FormatBrave:
	default:
		errs = append(errs, fmt.Errorf("%s.search_format: %q, want searxng or brave", prefix, c.SearchFormat))
	}
	if c.SearchURL != "" && !strings.HasPrefix(c.SearchURL, "http://") && !strings.HasPrefix(c.SearchURL, "https://") {
		errs = append(errs, fmt.Errorf("%s.search_url: %q is not an http or https URL", prefix, c.SearchURL))
	}
	if c.SearchKeyEnv != "" && os.Getenv(c.SearchKeyEnv) == "" {
		errs = append(errs, fmt.Errorf("%s.search_key_env: environment variable %s is empty", prefix, c.SearchKeyEnv))
	}
	if c.SearchFormat == FormatBrave && c.SearchURL != "" && c.SearchKeyEnv == "" {
		errs = append(errs, fmt.Errorf("%s.search_key_env: required with search_format \"brave\"", prefix))
	}
	return errs
}

// Tools returns webfetch and, when a search endpoint is configured,
// websearch, each requiring the network permission. c must be validated.
func Tools(c Config) ([]skills.GoTool, error) {
	if errs := c.Validate("builtin.web"); len(errs) > 0 {
		return nil, errs[0]
	}
	f, err := newFetcher(c)
	if err != nil {
		return nil, err
	}
	tools := []skills.GoTool{f.tool()}
	if c.SearchURL != "" {
		tools = append(tools, newSearcher(c).tool())
	}
	return tools, nil
}
