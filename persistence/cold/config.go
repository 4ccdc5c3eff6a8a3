package cold

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/evoclaw/evoclaw/persistence/libsqlhttp"
)

// TokenEnv names the environment variable holding the cold tier's auth
// token (a JWT). The token is never read from a file, flag or config.
const TokenEnv = "EVOCLAW_COLD_AUTH_TOKEN"

// Defaults for the zero fields of Config.
const (
	DefaultBatchSize      = 500              // records per shipped batch
	DefaultPollInterval   = 10 * time.Second // wait when nothing is left to ship
	DefaultMinBackoff     = time.Second      // first retry delay after a failure
	DefaultMaxBackoff     = 5 * time.Minute  // retry delay cap while unreachable
	DefaultRequestTimeout = 30 * time.Second // one request to the cold tier
)

// ErrInvalidConfig reports a Config that cannot be used.
var ErrInvalidConfig = errors.New("invalid cold tier config")

// Config configures the cold tier. The zero value means no cold tier.
type Config struct {
	// URL of the libSQL database: libsql://, https:// or http://. Empty
	// means no cold tier. It must not carry credentials.
	URL string `toml:"url"`
	// AuthToken is the JWT sent to the server; empty means none. It is
	// filled from the environment (TokenEnv) by FromEnv, never from TOML.
	AuthToken string `toml:"-"`
	// BatchSize is the most records shipped per request. Zero means
	// DefaultBatchSize.
	BatchSize int `toml:"batch_size"`
	// PollInterval is how long the shipper waits when it has caught up.
	// Zero means DefaultPollInterval.
	PollInterval time.Duration `toml:"poll_interval"`
	// MinBackoff and MaxBackoff bound the retry delay after a failed
	// request; it doubles from MinBackoff up to MaxBackoff. Zero means
	// DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff time.Duration `toml:"min_backoff"` // first retry delay
	MaxBackoff time.Duration `toml:"max_backoff"` // retry delay cap
	// RequestTimeout bounds one request. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration `toml:"request_timeout"`
	// MaxAnswerBytes bounds one answer of the server; a larger one fails
	// the request with libsqlhttp.ErrAnswerTooLarge. Zero means
	// libsqlhttp.DefaultMaxAnswerBytes (32 MiB).
	MaxAnswerBytes int64 `toml:"max_answer_bytes"`
}

// Enabled reports whether a cold tier is configured.
func (c Config) Enabled() bool { return c.URL != "" }

// FromEnv returns c with AuthToken taken from the TokenEnv variable.
func (c Config) FromEnv() Config {
	c.AuthToken = os.Getenv(TokenEnv)
	return c
}

// withDefaults fills the zero fields and validates c.
func (c Config) withDefaults() (Config, error) {
	if c.URL == "" {
		return c, fmt.Errorf("%w: url is empty", ErrInvalidConfig)
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return c, fmt.Errorf("%w: url: %v", ErrInvalidConfig, err)
	}
	switch u.Scheme {
	case "libsql", "https", "http":
	default:
		return c, fmt.Errorf("%w: url scheme %q, want libsql, https or http", ErrInvalidConfig, u.Scheme)
	}
	if u.User != nil || u.RawQuery != "" {
		return c, fmt.Errorf("%w: url must not carry credentials or parameters; put the token in %s", ErrInvalidConfig, TokenEnv)
	}
	if c.BatchSize < 0 || c.PollInterval < 0 || c.MinBackoff < 0 || c.MaxBackoff < 0 || c.RequestTimeout < 0 || c.MaxAnswerBytes < 0 {
		return c, fmt.Errorf("%w: batch size, answer size and durations must not be negative", ErrInvalidConfig)
	}
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.MinBackoff = cmp.Or(c.MinBackoff, DefaultMinBackoff)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, DefaultMaxBackoff)
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	c.RequestTimeout = cmp.Or(c.RequestTimeout, DefaultRequestTimeout)
	c.MaxAnswerBytes = cmp.Or(c.MaxAnswerBytes, libsqlhttp.DefaultMaxAnswerBytes)
	return c, nil
}

// String describes c without its token.
func (c Config) String() string {
	tok := "none"
	if c.AuthToken != "" {
		tok = "set"
	}
	return fmt.Sprintf("cold tier %s (token %s)", c.URL, tok)
}
