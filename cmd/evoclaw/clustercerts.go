package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/cluster/certs"
)

// cmdCluster makes the certificates of a cluster's mutual TLS
// ([cluster.tls], docs/CLUSTER.md), offline. Nothing is overwritten.
func cmdCluster(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: evoclaw cluster needs ca or cert", errUsage)
	}
	fs := newFlags("cluster "+args[0], stderr)
	dir := fs.String("dir", "", "the directory of the CA's certificate and key (created 0700 if missing)")
	days := fs.Int("days", 0, "validity in days (default 3650 for a CA, 730 for a node)")
	var hosts []string
	parse := func(n int, usage string) ([]string, error) {
		pos, err := parseFlags(fs, args[1:])
		switch {
		case err != nil:
			return nil, err
		case len(pos) != n:
			return nil, fmt.Errorf("%w: %s", errUsage, usage)
		case *dir == "":
			return nil, fmt.Errorf("%w: --dir is required: %s", errUsage, usage)
		case *days < 0:
			return nil, fmt.Errorf("%w: --days %d: want a positive number", errUsage, *days)
		}
		return pos, nil
	}
	opts := func() certs.Options { return certs.Options{Validity: time.Duration(*days) * 24 * time.Hour} }
	switch args[0] {
	case "ca":
		if _, err := parse(0, "evoclaw cluster ca --dir DIR"); err != nil {
			return err
		}
		f, err := certs.WriteCA(*dir, opts())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote the cluster's CA: %s and its key %s (mode 0600)\n", f.Cert, f.Key)
		fmt.Fprintf(stdout, "keep the key off the nodes, offline if you can; make each node's certificate with\n  evoclaw cluster cert --dir %s NODE_ID\n", *dir)
		return nil
	case "cert":
		fs.Func("host", "an address or name of the node, for other TLS tools (repeat, or separate with commas); the cluster checks the CA's signature only", func(v string) error {
			for _, h := range strings.Split(v, ",") {
				if h = strings.TrimSpace(h); h != "" {
					hosts = append(hosts, h)
				}
			}
			return nil
		})
		pos, err := parse(1, "evoclaw cluster cert --dir DIR NODE_ID [--host H]...")
		if err != nil {
			return err
		}
		node := pos[0]
		f, err := certs.WriteNode(*dir, node, hosts, opts())
		if err != nil {
			return err
		}
		ca, names := certs.CAFiles(*dir), certs.NodeFiles("", node)
		fmt.Fprintf(stdout, "wrote %s's certificate %s and its key %s (mode 0600), signed by %s\n", node, f.Cert, f.Key, ca.Cert)
		fmt.Fprintf(stdout, "copy %s, %s and %s (never %s) to %s. An etcd server takes them as\n  --client-cert-auth --trusted-ca-file %[1]s --cert-file %[2]s --key-file %[3]s\na node as these lines of its evoclaw.toml:\n\n",
			certs.CACertFile, names.Cert, names.Key, certs.CAKeyFile, node)
		fmt.Fprintf(stdout, "[cluster.tls]\nca_file = %q\ncert_file = %q\nkey_file = %q\n", certs.CACertFile, names.Cert, names.Key)
		return nil
	}
	return fmt.Errorf("%w: unknown cluster command %q, want ca or cert", errUsage, args[0])
}
