package broker

import (
	"errors"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	mqtt "github.com/mochi-mqtt/server/v2"
)

// housekeepingEvery is how often the broker looks for expired sessions,
// expired in-flight messages and expired retained messages. mochi looks
// every second, and each look copies the whole client table, every
// client's in-flight messages and every retained message (an 800-byte
// packet value each): with one agent's retained capabilities and
// status that was 3.2 KB of garbage a second on an idle node, three
// quarters of all it allocated (a heap profile over two idle minutes),
// and it grows with every agent and retained message. Ten seconds
// bounds how late an expired session or an expired MQTT 5 message goes;
// nothing of ours sets a message expiry, and our clients use clean
// sessions. Delayed last wills (MQTT 5) keep mochi's one-second look.
const housekeepingEvery = 10 * time.Second

// housekeepingTickers are the fields of mochi's event loop (the unexported
// Server.loop) whose tickers slowHousekeeping resets.
var housekeepingTickers = []string{"clientExpiry", "inflightExpiry", "retainedExpiry"}

// errMochiLayout reports that mochi's event loop no longer has the fields
// slowHousekeeping expects (a mochi upgrade): the broker then keeps
// mochi's one-second housekeeping, which is correct, only costlier.
var errMochiLayout = errors.New("mochi's event loop is not laid out as expected")

// slowHousekeeping resets the tickers of mochi's expiry sweeps to every.
// mochi has no option for them; they are reached through reflection on
// the version go.mod pins, and TestSlowHousekeeping fails when an upgrade
// moves them. Resetting a ticker is safe while the event loop receives
// from it.
func slowHousekeeping(s *mqtt.Server, every time.Duration) error {
	loop := reflect.ValueOf(s).Elem().FieldByName("loop")
	if !loop.IsValid() || loop.Kind() != reflect.Pointer || loop.IsNil() {
		return fmt.Errorf("%w: no loop", errMochiLayout)
	}
	tickerType := reflect.TypeFor[*time.Ticker]()
	tickers := make([]*time.Ticker, 0, len(housekeepingTickers))
	for _, name := range housekeepingTickers {
		f := loop.Elem().FieldByName(name)
		if !f.IsValid() || f.Type() != tickerType {
			return fmt.Errorf("%w: no ticker %s", errMochiLayout, name)
		}
		t := *(**time.Ticker)(unsafe.Pointer(f.UnsafeAddr()))
		if t == nil {
			return fmt.Errorf("%w: ticker %s not made", errMochiLayout, name)
		}
		tickers = append(tickers, t)
	}
	for _, t := range tickers {
		t.Reset(every)
	}
	return nil
}
