package mqttc

import (
	"crypto/x509"
	"errors"
)

// logKeyHint names what to change when a connection attempt fails in a way
// the operator fixes, not the network.
const logKeyHint = "hint"

// tlsHint says what to change when err is a failed verification of the
// broker's certificate, and "" otherwise. Such attempts are still retried:
// a Pi without a real-time clock starts in 1970 and its certificates turn
// valid once NTP has set the time, and a broker's certificate may be
// replaced while the agent waits.
func tlsHint(err error) string {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	switch {
	case errors.As(err, &unknown):
		return "the broker's certificate is signed by a CA this client does not trust: set ca_file ([mqtt] in agent.toml, [broker] in evoclaw.toml) to that CA's certificate"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "a certificate is expired or not yet valid: check this device's clock (a board with no real-time clock is set by NTP after boot) and the certificate's dates"
	case errors.As(err, &host):
		return "the broker's certificate does not name the host in the broker URL: connect with a name or address the certificate holds"
	}
	return ""
}
