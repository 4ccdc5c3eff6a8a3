package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// agentPasswordEnv is the variable the printed agent.toml reads the
// password from.
const agentPasswordEnv = "EVOCLAW_MQTT_PASSWORD"

// agentsUsage is what `evoclaw agents --help` prints.
const agentsUsage = `usage: evoclaw agents add NAME [--config FILE] [--data-dir DIR] [--role agent|orchestrator] [--rotate] [--broker URL] [--bcrypt-cost N]
       evoclaw agents list [--config FILE] [--data-dir DIR]
       evoclaw agents remove NAME [--config FILE] [--data-dir DIR]
the broker's identities: add prints the agent.toml lines and the password once
(evoclaw agents COMMAND --help lists the command's flags)
`

// cmdAgents manages the identities of the embedded broker: evoclaw agents
// add|list|remove.
func cmdAgents(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: evoclaw agents needs add, list or remove", errUsage)
	}
	fs := newFlags("agents "+args[0], stderr)
	config := fs.String("config", "", "evoclaw.toml of the node (for data_dir, [broker] users_file and, for add, the broker's port)")
	dataDir := fs.String("data-dir", "", "the node's data directory (overrides data_dir)")
	// parse parses the flags, wants n names after them (usage says how)
	// and finds the identity file and the node's configuration.
	var cfg orchestrator.Config
	parse := func(n int, usage string) (path string, names []string, err error) {
		if names, err = parseFlags(fs, args[1:]); err != nil {
			return "", nil, err
		}
		if len(names) != n {
			return "", nil, fmt.Errorf("%w: %s", errUsage, usage)
		}
		cfg, err = nodeConfig(*config, *dataDir)
		return cfg.UsersFilePath(), names, err
	}
	switch args[0] {
	case "add":
		role := fs.String("role", string(broker.RoleAgent), "agent, or orchestrator for another orchestrator or an operator tool")
		rotate := fs.Bool("rotate", false, "give an existing identity a new password (its sessions end)")
		brokerURL := fs.String("broker", "", "broker URL to print in the agent's configuration (default: the port of --config's [broker] tls_listen, else listen; tcp://ORCHESTRATOR-HOST:1883 without)")
		cost := fs.Int("bcrypt-cost", broker.DefaultBcryptCost, "bcrypt cost of the stored hash; each step doubles the broker's work per password check")
		path, pos, err := parse(1, "evoclaw agents add NAME")
		if err != nil {
			return err
		}
		if *brokerURL == "" {
			*brokerURL = embeddedBrokerURL(cfg.Broker)
		}
		return agentsAdd(stdout, path, pos[0], broker.Role(*role), *rotate, *brokerURL, *cost)
	case "list":
		path, _, err := parse(0, "evoclaw agents list takes no arguments")
		if err != nil {
			return err
		}
		return agentsList(stdout, path)
	case "remove":
		path, pos, err := parse(1, "evoclaw agents remove NAME")
		if err != nil {
			return err
		}
		if err := broker.RemoveUser(path, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %q from %s; a running node ends its sessions within seconds\n", pos[0], path)
		return nil
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, agentsUsage) // help is output, as for every command
		return flag.ErrHelp
	}
	return fmt.Errorf("%w: evoclaw agents %s: want add, list or remove", errUsage, args[0])
}

// nodeConfig is the node's configuration, from its file and the
// --data-dir override: where its identity file is, and its broker's
// listeners.
func nodeConfig(config, dataDir string) (orchestrator.Config, error) {
	var cfg orchestrator.Config
	if config != "" {
		var err error
		if cfg, err = orchestrator.LoadConfig(config); err != nil {
			return cfg, err
		}
	}
	if dataDir != "" {
		cfg.DataDir = dataDir
	}
	if config == "" { // defaults; a loaded file has its own, and its secrets are not needed here
		if err := cfg.Validate(); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// embeddedBrokerURL is the URL an agent dials for the node's embedded
// broker: its TLS listener when it has one (the password then never
// crosses the network in clear), else its plain one, on the listener's
// port; the host is the listener's when it names one other machines can
// dial, else a placeholder. Before, every agent was told port 1883, also
// of a node whose broker listened elsewhere or only on TLS.
func embeddedBrokerURL(b orchestrator.BrokerConf) string {
	scheme, addr := "tls", b.TLSListen
	if addr == "" {
		scheme, addr = "tcp", cmp.Or(b.Listen, orchestrator.DefaultBrokerListen)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "tcp://ORCHESTRATOR-HOST:1883"
	}
	if ip := net.ParseIP(host); host == "" || host == "localhost" || ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		host = "ORCHESTRATOR-HOST"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

func agentsAdd(w io.Writer, path, name string, role broker.Role, rotate bool, brokerURL string, cost int) error {
	password, err := broker.AddUser(path, name, role, cost, rotate)
	if err != nil {
		return err
	}
	verb := "added"
	if rotate {
		verb = "set a new password for"
	}
	fmt.Fprintf(w, "%s %s %q in %s; a running node picks it up within seconds.\n", verb, role, name, path)
	fmt.Fprintf(w, "The password is shown this once: only its bcrypt hash is stored.\n\n")
	if role == broker.RoleOrchestrator {
		fmt.Fprintf(w, "# evoclaw.toml of the other orchestrator\n[broker]\nurl = %q\nusername = %q\npassword_env = %q\n\n", brokerURL, name, agentPasswordEnv)
	} else {
		fmt.Fprintf(w, "# agent.toml on %s\nagent_id = %q\n\n[mqtt]\nbroker = %q\nusername = %q\npassword_env = %q\n\n", name, name, brokerURL, name, agentPasswordEnv)
	}
	if strings.HasPrefix(brokerURL, "tls://") || strings.HasPrefix(brokerURL, "ssl://") {
		// Without it, a broker certificate made by the operator's own CA
		// fails verification at every attempt.
		fmt.Fprintf(w, "# the broker's certificate is verified against the system's roots; if your own CA signed it\n"+
			"# ([broker] tls_cert_file), copy that CA's certificate to the device and add its path:\n# ca_file = \"/etc/evoclaw/broker-ca.pem\"\n\n")
	}
	fmt.Fprintf(w, "# its environment (a systemd EnvironmentFile with mode 0600, say):\n%s=%s\n", agentPasswordEnv, password)
	return nil
}

func agentsList(w io.Writer, path string) error {
	users, err := broker.ReadUsersFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(w, "no identities yet (%s does not exist); add one with `evoclaw agents add NAME`\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	tw := newTable(w, "NAME\tROLE\tPASSWORD SET\tBCRYPT COST")
	for _, u := range users {
		c, _ := bcrypt.Cost([]byte(u.Hash)) // ReadUsersFile checked it
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", u.Name, u.Role, u.Created.Format(time.RFC3339), c)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d identities in %s\n", len(users), path)
	return nil
}
