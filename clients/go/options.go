package sluice

import (
	"crypto/tls"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
)

// Option configures a Client in Dial.
type Option func(*config)

// config is the result of the options. The zero value is the default:
// plaintext unless the address says grpc+tls, no token, no extra dial
// options, memory.DefaultAllocator.
type config struct {
	token    string
	basic    *basicAuth
	tls      *tls.Config
	dialOpts []grpc.DialOption
	mem      memory.Allocator
}

// WithToken sends the header "authorization: Bearer <token>" with every
// call. The token is sent over plaintext connections too, so use TLS
// beyond a trusted network. An empty token sends no header.
func WithToken(token string) Option {
	return func(c *config) { c.token = token }
}

// WithTLSConfig connects with TLS using cfg, for example to trust a
// private certificate authority or present a client certificate. It makes a
// bare "host:port" address use TLS; it cannot be combined with a plaintext
// scheme (grpc://, grpc+tcp://). Without it, grpc+tls:// addresses use the
// system's root certificates.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *config) { c.tls = cfg }
}

// WithDialOptions adds gRPC dial options, applied after the client's own
// (transport credentials and token), so they can override them; for
// example grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(n)).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// WithAllocator sets the allocator of the memory of decoded schemas and
// batches (decompressed buffers, among others). Default:
// memory.DefaultAllocator.
func WithAllocator(mem memory.Allocator) Option {
	return func(c *config) { c.mem = mem }
}
