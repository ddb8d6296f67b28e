package module

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	// pluginName is the key Kusion dispenses a module under.
	pluginName = "module-default"
	// generateMethod is the full gRPC method name: module.proto declares no
	// package, so the service is plain "Module".
	generateMethod = "/Module/Generate"
)

// handshake is Kusion's: a module checks these before serving, and a binary
// that is not a Kusion module fails here rather than misbehaving later.
func handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  1,
		MagicCookieKey:   "MODULE_PLUGIN",
		MagicCookieValue: "ON",
	}
}

// Generator is what a module implements; Serve exposes it over the protocol.
type Generator interface {
	Generate(ctx context.Context, req Request) (*Response, error)
}

// grpcPlugin is the go-plugin glue for both ends: the host uses GRPCClient,
// a module (through Serve) uses GRPCServer.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl Generator
}

func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "Module",
		HandlerType: (*Generator)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Generate",
			Handler:    generateHandler,
		}},
		Metadata: "module.proto",
	}, p.impl)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &client{conn: conn}, nil
}

// generateHandler is the server side of /Module/Generate, shaped as generated
// gRPC code would shape it so interceptors see the call.
func generateHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := &generatorRequest{}
	if err := dec(in); err != nil {
		return nil, err
	}
	call := func(ctx context.Context, req any) (any, error) {
		resp, err := srv.(Generator).Generate(ctx, req.(*generatorRequest).Request)
		if err != nil {
			return nil, err
		}
		w, err := encodeResponse(resp)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return w, nil
	}
	if interceptor == nil {
		return call(ctx, in)
	}
	return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: generateMethod}, call)
}

// client is the host's end of a dispensed module.
type client struct {
	conn *grpc.ClientConn
}

func (c *client) generate(ctx context.Context, req Request) (*generatorResponse, error) {
	out := &generatorResponse{}
	if err := c.conn.Invoke(ctx, generateMethod, &generatorRequest{Request: req}, out, grpc.ForceCodec(codec{})); err != nil {
		return nil, err
	}
	return out, nil
}

// Serve runs g as a Kusion module: call it from a module binary's main. It
// returns only when the host is done with the module.
func Serve(g Generator) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: handshake(),
		Plugins:         plugin.PluginSet{pluginName: &grpcPlugin{impl: g}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.ForceServerCodec(codec{}))...)
		},
	})
}

// Generate starts the module binary with the environment env (and
// go-plugin's handshake variables, nothing of this process's), asks it to
// generate from req, and stops it. The module's log output goes to
// slog.Default, tagged with the binary.
func Generate(ctx context.Context, binary string, req Request, env []string) (*Response, error) {
	logger := slog.Default().With("module", binary)
	cmd := exec.CommandContext(ctx, binary)
	cmd.Env = append([]string{}, env...)
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  handshake(),
		Plugins:          plugin.PluginSet{pluginName: &grpcPlugin{}},
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           newHCLogger(logger),
	})
	// Kill also covers a failed handshake: the process may be running and
	// must not outlive the call.
	defer pc.Kill()

	rpc, err := pc.Client()
	if err != nil {
		return nil, fmt.Errorf("starting module %s: handshake failed (is it a Kusion module built for this platform?): %w", binary, err)
	}
	raw, err := rpc.Dispense(pluginName)
	if err != nil {
		return nil, fmt.Errorf("starting module %s: dispensing plugin %q: %w", binary, pluginName, err)
	}
	c, ok := raw.(*client)
	if !ok {
		return nil, fmt.Errorf("starting module %s: plugin %q dispensed a %T", binary, pluginName, raw)
	}

	logger.DebugContext(ctx, "calling module", "project", req.Project, "stack", req.Stack, "app", req.App)
	w, err := c.generate(ctx, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("module %s: Generate: %w: %w", binary, ctxErr, err)
		}
		// An error the module returned arrives as code Unknown; its message
		// is what the module's author wrote, and the gRPC wrapping around it
		// is noise to the reader. Other codes mean the call itself failed.
		if s, ok := status.FromError(err); ok && s.Code() == codes.Unknown {
			return nil, fmt.Errorf("module %s: Generate returned an error: %s", binary, s.Message())
		}
		return nil, fmt.Errorf("module %s: calling Generate: %w", binary, err)
	}
	return decodeResponse(binary, w)
}
