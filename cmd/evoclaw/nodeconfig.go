package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/evoclaw/evoclaw/orchestrator"
)

// configFlag is --config: the node's evoclaw.toml, from which the operator
// commands take the data directory and the cold tier's URL. Flags given on
// the command line win over the file, and the file over the environment.
type configFlag struct{ path string }

// addDataDirFlags adds --data-dir, the directory of the node's audit.db,
// and --config, which may set it, to fs.
func addDataDirFlags(fs *flag.FlagSet) (dataDir *string, conf *configFlag) {
	dataDir = fs.String("data-dir", orchestrator.DefaultDataDir, "the node's data directory (holds audit.db)")
	conf = &configFlag{}
	conf.register(fs)
	return dataDir, conf
}

func (c *configFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&c.path, "config", "", "the node's evoclaw.toml: its data_dir and [audit.cold] url are used unless given as flags")
}

// apply fills dataDir and, when non-nil, coldURL from the file named by
// --config, where fs (parsed) did not set them. Without --config it does
// nothing. A cold URL from the file wins over $EVOCLAW_COLD_URL. A file
// that cannot be loaded is an error, not a usage error.
func (c *configFlag) apply(fs *flag.FlagSet, dataDir, coldURL *string) error {
	if c.path == "" {
		return nil
	}
	cfg, err := orchestrator.LoadConfig(c.path)
	if err != nil { // the file's fault, not the command line's: exit 1, as serve
		return fmt.Errorf("--config: %w", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if dataDir != nil && !set["data-dir"] && cfg.DataDir != "" {
		*dataDir = cfg.DataDir
	}
	if coldURL != nil && !set["cold-url"] && cfg.Audit.Cold.URL != "" {
		*coldURL = cfg.Audit.Cold.URL
	}
	return nil
}

// coldURLDefault is --cold-url's default: $EVOCLAW_COLD_URL.
func coldURLDefault() string { return os.Getenv(coldURLEnv) }
