package module

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The messages of Kusion's module.proto, encoded by hand: there is no protoc
// here, and two messages of bytes and strings do not justify generated code.
// Field numbers are the wire contract; names only document it.
//
//	message GeneratorRequest {
//	  string project = 1; string stack = 2; string app = 3;
//	  bytes workload = 4; bytes dev_config = 5; bytes platform_config = 6;
//	  bytes context = 7; bytes secret_store = 8;
//	}
//	message GeneratorResponse { repeated bytes resources = 1; bytes patcher = 2; }
const (
	fieldProject        protowire.Number = 1
	fieldStack          protowire.Number = 2
	fieldApp            protowire.Number = 3
	fieldWorkload       protowire.Number = 4
	fieldDevConfig      protowire.Number = 5
	fieldPlatformConfig protowire.Number = 6
	fieldContext        protowire.Number = 7
	fieldSecretStore    protowire.Number = 8

	fieldResources protowire.Number = 1
	fieldPatcher   protowire.Number = 2
)

// generatorRequest is GeneratorRequest on the wire.
type generatorRequest struct {
	Request
}

// generatorResponse is GeneratorResponse on the wire: resources and patcher
// still encoded as the module wrote them.
type generatorResponse struct {
	Resources [][]byte
	Patcher   []byte
}

func (m *generatorRequest) marshal() []byte {
	var b []byte
	// proto3 leaves empty scalars off the wire; doing the same keeps the
	// bytes identical to what Kusion's generated code sends.
	for _, f := range []struct {
		n protowire.Number
		v []byte
	}{
		{fieldProject, []byte(m.Project)},
		{fieldStack, []byte(m.Stack)},
		{fieldApp, []byte(m.App)},
		{fieldWorkload, m.Workload},
		{fieldDevConfig, m.DevConfig},
		{fieldPlatformConfig, m.PlatformConfig},
		{fieldContext, m.Context},
		{fieldSecretStore, m.SecretStore},
	} {
		if len(f.v) == 0 {
			continue
		}
		b = protowire.AppendTag(b, f.n, protowire.BytesType)
		b = protowire.AppendBytes(b, f.v)
	}
	return b
}

func (m *generatorRequest) unmarshal(b []byte) error {
	return eachField(b, func(n protowire.Number, v []byte) {
		switch n {
		case fieldProject:
			m.Project = string(v)
		case fieldStack:
			m.Stack = string(v)
		case fieldApp:
			m.App = string(v)
		case fieldWorkload:
			m.Workload = v
		case fieldDevConfig:
			m.DevConfig = v
		case fieldPlatformConfig:
			m.PlatformConfig = v
		case fieldContext:
			m.Context = v
		case fieldSecretStore:
			m.SecretStore = v
		}
	})
}

func (m *generatorResponse) marshal() []byte {
	var b []byte
	for _, r := range m.Resources {
		// Repeated elements go on the wire even when empty, as protobuf does.
		b = protowire.AppendTag(b, fieldResources, protowire.BytesType)
		b = protowire.AppendBytes(b, r)
	}
	if len(m.Patcher) > 0 {
		b = protowire.AppendTag(b, fieldPatcher, protowire.BytesType)
		b = protowire.AppendBytes(b, m.Patcher)
	}
	return b
}

func (m *generatorResponse) unmarshal(b []byte) error {
	return eachField(b, func(n protowire.Number, v []byte) {
		switch n {
		case fieldResources:
			m.Resources = append(m.Resources, v)
		case fieldPatcher:
			// A singular field seen twice keeps the last value, as protobuf
			// decoders do; older modules sent "repeated bytes patchers" here.
			m.Patcher = v
		}
	})
}

// eachField calls fn with every length-delimited field of b, copied so the
// caller may keep it after gRPC reuses its buffer. Fields of other wire types
// are skipped, as a protobuf decoder skips fields it does not know.
func eachField(b []byte, fn func(protowire.Number, []byte)) error {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return fmt.Errorf("reading field tag: %w", protowire.ParseError(l))
		}
		b = b[l:]
		if typ != protowire.BytesType {
			l = protowire.ConsumeFieldValue(n, typ, b)
			if l < 0 {
				return fmt.Errorf("skipping field %d: %w", n, protowire.ParseError(l))
			}
			b = b[l:]
			continue
		}
		v, l := protowire.ConsumeBytes(b)
		if l < 0 {
			return fmt.Errorf("reading field %d: %w", n, protowire.ParseError(l))
		}
		fn(n, bytes.Clone(v))
		b = b[l:]
	}
	return nil
}

// codec is the gRPC codec for the two messages above. Anything else — go-plugin
// serves its own broker, controller and stdio services on the same server —
// goes to the protobuf runtime as gRPC's default codec would.
type codec struct{}

// Name is "proto" because that is the content subtype Kusion's modules
// (generated gRPC code) expect.
func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case *generatorRequest:
		return m.marshal(), nil
	case *generatorResponse:
		return m.marshal(), nil
	case proto.Message:
		return proto.Marshal(m)
	default:
		return nil, fmt.Errorf("encoding %T: not a module protocol message", v)
	}
}

func (codec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *generatorRequest:
		return m.unmarshal(data)
	case *generatorResponse:
		return m.unmarshal(data)
	case proto.Message:
		return proto.Unmarshal(data, m)
	default:
		return fmt.Errorf("decoding %T: not a module protocol message", v)
	}
}
