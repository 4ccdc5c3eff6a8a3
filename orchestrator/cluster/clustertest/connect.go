//go:build !nocluster

// Package clustertest helps tests probe a cluster member's actor port
// from outside, as a stranger on the network would.
package clustertest

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// connectTimeout bounds Connect.
const connectTimeout = 10 * time.Second

// CheckPort fails t unless the member's actor port at addr refuses every
// stranger before any message: a gRPC client in plain text, one in TLS
// without a certificate, one with a certificate of another CA (foreign,
// as it verifies the server and as it accepts any), while the same
// client with a member's certificate (member: a member's dial
// configuration) is accepted. Each is a subtest.
func CheckPort(t *testing.T, addr string, member, foreign *tls.Config) {
	t.Helper()
	noCert := member.Clone()
	noCert.Certificates = nil
	anyServer := foreign.Clone()
	anyServer.VerifyConnection = nil // a stranger that talks to anyone
	for _, p := range []struct {
		name  string
		creds credentials.TransportCredentials
		ok    bool
	}{
		{"a member's certificate", credentials.NewTLS(member), true},
		{"plain text", insecure.NewCredentials(), false},
		{"TLS without a certificate", credentials.NewTLS(noCert), false},
		{"a certificate of another CA", credentials.NewTLS(foreign), false},
		{"a certificate of another CA, accepting any server", credentials.NewTLS(anyServer), false},
	} {
		t.Run(p.name, func(t *testing.T) {
			if err := connect(addr, p.creds); p.ok != (err == nil) {
				t.Errorf("connect to %s: %v, want accepted %v", addr, err, p.ok)
			}
		})
	}
}

// connect opens protoactor's Receive stream on the actor port at addr
// with creds and sends the connect request a member sends before any
// message; nil means the member answered it, so messages would follow.
func connect(addr string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	stream, err := remote.NewRemotingClient(conn).Receive(ctx)
	if err != nil {
		return err
	}
	req := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{SystemId: "stranger", Address: "127.0.0.1:1"}}}}}
	if err := stream.Send(req); err != nil {
		return err
	}
	m, err := stream.Recv()
	if err != nil {
		return err
	}
	if m.GetConnectResponse() == nil {
		return fmt.Errorf("answer %T, want a connect response", m.MessageType)
	}
	return nil
}
