package chaos

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// ServeBroker runs the embedded MQTT broker alone on listen until ctx
// ends: the broker `evoclaw chaos broker-restart` kills, a process of its
// own. It prints "evoclaw broker ready: tcp://ADDR" once it accepts
// connections. anonymous lets clients in without credentials; the broker
// refuses that unless listen is a loopback address.
func ServeBroker(ctx context.Context, listen string, anonymous bool, stdout io.Writer, log *slog.Logger) error {
	b, err := broker.Start(broker.Options{Listen: listen, AllowAnonymous: anonymous, Logger: log})
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	fmt.Fprintf(stdout, "evoclaw broker ready: %s\n", b.URL())
	<-ctx.Done()
	return b.Close()
}
