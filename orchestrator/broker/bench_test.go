package broker_test

import (
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// BenchmarkConnect measures what authentication adds to one MQTT CONNECT
// over loopback, up to the CONNACK: an in-memory password (SHA-256), a
// bcrypt hash at the default cost checked for the first time, and the same
// identity reconnecting with its success cached. Run it on the target board:
//
//	go test -run '^$' -bench Connect -benchtime 20x ./orchestrator/broker
func BenchmarkConnect(b *testing.B) {
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), broker.DefaultBcryptCost)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), broker.UsersFileName)
	if err := broker.WriteUsersFile(path, []broker.FileUser{{Name: "hashed", Role: broker.RoleAgent, Hash: string(hash), Created: time.Now()}}); err != nil {
		b.Fatal(err)
	}
	br, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", UsersFile: path, ReloadInterval: -1,
		Users: []broker.User{{Name: "mem", Role: broker.RoleAgent, Password: "pw"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	connect := func(b *testing.B, user string) {
		c, rc := mqtttest.DialRaw(b, br.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-" + user, Username: user, Password: "pw"})
		if rc != 0 {
			b.Fatalf("CONNACK %d", rc)
		}
		_ = c.Close()
	}
	b.Run("memory", func(b *testing.B) {
		for b.Loop() {
			connect(b, "mem")
		}
	})
	b.Run("bcrypt-first", func(b *testing.B) {
		for b.Loop() {
			broker.ForgetCachedPasswords(br)
			connect(b, "hashed")
		}
	})
	b.Run("bcrypt-cached", func(b *testing.B) {
		connect(b, "hashed")
		for b.Loop() {
			connect(b, "hashed")
		}
	})
}
