package transport

import "encoding/binary"

// The protobuf wire format, as much of it as the OTLP exporter writes:
// a field's tag (its number and wire type), varints, fixed-width
// integers and length-delimited bytes (protobuf.dev, "Encoding"). It is
// written here rather than taken from google.golang.org/protobuf's
// protowire, whose package initialisation (internal/detrand) opens and
// reads the program's own executable at every start.

// wireNumber is a field number; wireType a wire type.
type (
	wireNumber int32
	wireType   int8
)

// The wire types the exporter writes.
const (
	wireVarint  wireType = 0
	wireFixed64 wireType = 1
	wireBytes   wireType = 2
	wireFixed32 wireType = 5
)

func appendVarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendTag(b []byte, n wireNumber, t wireType) []byte {
	return appendVarint(b, uint64(n)<<3|uint64(t))
}

func appendBytes(b, v []byte) []byte { return append(appendVarint(b, uint64(len(v))), v...) }

func appendStr(b []byte, v string) []byte { return append(appendVarint(b, uint64(len(v))), v...) }

func appendFixed64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func appendFixed32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
