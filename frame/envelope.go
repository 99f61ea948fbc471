package frame

import (
	"math"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// EnvelopeError says why a JSON value is not a valid JSON-RPC message as MCP
// uses JSON-RPC 2.0. [Message.Err] returns one for a message of Kind
// [Invalid]; it matches [ErrNotJSONRPC].
//
// The rules are those of the JSON-RPC 2.0 specification (§4 Request object,
// §4.1 Notification, §5 Response object, §5.1 Error object) and of MCP's
// schema (JSONRPCRequest, JSONRPCNotification, JSONRPCResultResponse,
// JSONRPCErrorResponse, RequestId), both at once, and no stricter:
//
//   - the message is a JSON object; "jsonrpc" is the string "2.0";
//   - an object with a string "method" is a request when it has an "id",
//     else a notification; a request's id is a string or an integer (a
//     number without a fractional part, as JSON Schema's "integer": 1.0
//     and 1e3 count); MCP allows no null id, JSON-RPC allows no other type;
//     "params", when present, is an object (JSON-RPC allows an array, MCP
//     does not);
//   - an object with a "result" or an "error" (and no string "method") is a
//     response, with one of the two, not both; a result has an id, a string
//     or an integer, and is an object (MCP's Result); an error is an object
//     with an integer "code" and a string "message", and its id is a string,
//     an integer, null (JSON-RPC's id of an error that has none to answer)
//     or absent (MCP from 2025-11-25 on);
//   - "method", when present in anything but a response, is a string;
//   - other members are allowed;
//   - no member name is given twice in the envelope, nor in an object
//     directly in it (params, result, error), nor in an object directly in
//     one of those (params._meta, params.arguments, result._meta …): the
//     gateway reads the first of two members and a peer's parser may keep
//     the last, so the two would not see the same message. (Deeper, a
//     repeated name is passed on as it is.)
//
// [Parse] also refuses, with an EnvelopeError that matches [ErrTooDeep],
// JSON nested deeper than its limit; the error's Shape and ID are read
// from the envelope's members all the same.
//
// A batch is not judged as a whole: its elements are, one by one (see
// [Message.Elements]).
type EnvelopeError struct {
	// Reason says what is wrong, e.g. `jsonrpc must be "2.0"`.
	Reason string
	// Shape is the kind the message has by the members it has, ignoring
	// what is wrong with them: Request or Notification for a method,
	// Result or Error for a result or an error, Invalid for none of these.
	// It says who may be waiting: the sender of a request-shaped message
	// for its answer, the sender of the request a response-shaped one
	// answers for that answer.
	Shape Kind
	// ID is the message's id when it is one a request may have (a string
	// or an integer), else "". Answer a request-shaped message under it.
	// Where the id is given twice, it is the first.
	ID ID

	limit error // ErrTooDeep for a message past the depth limit
}

func (e *EnvelopeError) Error() string { return e.Reason }

// Is reports whether target is [ErrNotJSONRPC], or [ErrTooDeep] for a
// message nested past the limit.
func (e *EnvelopeError) Is(target error) bool {
	return target == ErrNotJSONRPC || e.limit != nil && target == e.limit
}

// Err returns why m is not a valid JSON-RPC message: an *[EnvelopeError] for
// a message of Kind [Invalid], [ErrEmpty] for the zero Message, and nil for
// a valid message or a batch.
func (m Message) Err() error {
	switch {
	case m.kind != Invalid:
		return nil
	case len(m.raw) == 0:
		return ErrEmpty
	}
	reason := m.why.String()
	if m.why == duplicateMember {
		reason = "duplicate member " + strconv.Quote(m.method)
	}
	return &EnvelopeError{Reason: reason, Shape: m.shape, ID: m.id}
}

// invalidate returns m as an Invalid message for why, keeping its shape
// and the id it could be answered under; detail is what why names.
func (m Message) invalidate(why reason, detail string) Message {
	if m.kind == Batch {
		return m // a batch is judged element by element
	}
	if m.kind != Invalid {
		m.shape, m.kind = m.kind, Invalid
	}
	if m.id.IsNull() { // an error's: not one to answer under
		m.id = ""
	}
	m.why, m.method = why, detail
	return m
}

// tooDeep returns the error for raw, which nests past limit: an
// *EnvelopeError whose shape and id are those its envelope e gives.
func tooDeep(raw []byte, e *envelope, limit int) error {
	err := &EnvelopeError{Reason: depthReason(limit), limit: ErrTooDeep}
	if raw[0] != '{' {
		return err
	}
	m := classify(raw, e)
	err.Shape, err.ID = m.shape, m.id
	if m.kind != Invalid {
		err.Shape = m.kind
	}
	if err.Shape != Request && err.Shape != Notification && !err.Shape.IsResponse() {
		err.ID = ""
	}
	return err
}

// reason is why a message is Invalid; the zero reason is none.
type reason uint8

const (
	validEnvelope reason = iota
	notJSONRPC
	badVersion
	badMethod
	badRequestID
	badParams
	resultAndError
	badResultID
	badResult
	badErrorID
	badError
	duplicateMember
)

func (r reason) String() string {
	switch r {
	case validEnvelope:
		return ""
	case badVersion:
		return `jsonrpc must be "2.0"`
	case badMethod:
		return "method must be a string"
	case badRequestID:
		return "the id of a request must be a string or an integer"
	case badParams:
		return "params must be an object"
	case resultAndError:
		return "a response has a result or an error, not both"
	case badResultID:
		return "a result needs an id that is a string or an integer"
	case badResult:
		return "result must be an object"
	case badErrorID:
		return "the id of an error must be a string, an integer or null"
	case badError:
		return "error must be an object with an integer code and a string message"
	}
	return "not a JSON-RPC message"
}

// The envelope members an object has (the first of each name counts).
const (
	hasVersion uint8 = 1 << iota
	hasID
	hasMethod
	hasParams
	hasResult
	hasError
)

// envelope is what the members of an object say of its envelope: the
// first member of each name.
type envelope struct {
	seen       uint8 // has... bits
	version    bool  // jsonrpc is "2.0"
	params     bool  // params is an object
	result     bool  // result is an object
	idType     gjson.Type
	methodType gjson.Type
	idRaw      string
	method     string
	errRaw     string
	// idAt is where the first id member's value starts; paramsAt and
	// paramsLen locate the params member's value when it is an object
	// and the only params (paramsLen 0 otherwise).
	idAt, paramsAt, paramsLen int
	// metaAt and metaLen locate the value of the first params's _meta
	// member when it is an object and the only _meta (metaLen 0
	// otherwise); metaSeen says a _meta was read.
	metaAt, metaLen int
	metaSeen        bool
	metaNames       uint64 // the name signature of its members (see nameBit)
}

// paramsMeta takes in the value of a _meta member of the first params
// object, len bytes from byte at of the message; object says it is one,
// and names is the name signature of its members (see nameBit).
func (e *envelope) paramsMeta(at, n int, object bool, names uint64) {
	if e.metaSeen || e.seen&hasParams != 0 {
		// A second _meta, or a _meta in a second params (Invalid
		// messages): gjson, reading a path under _meta, goes on to the
		// next when the first lacks the rest, so such reads walk params.
		e.metaLen = 0
		e.metaSeen = true
		return
	}
	e.metaSeen = true
	if object {
		e.metaAt, e.metaLen, e.metaNames = at, n, names
	}
}

// member takes in the member name whose value is the valid JSON raw, which
// starts at byte at of the message, when it is the first of an envelope
// member's name. raw is kept, not copied.
func (e *envelope) member(name string, at int, raw string) {
	switch name {
	case "jsonrpc":
		if e.seen&hasVersion == 0 {
			e.seen |= hasVersion
			e.version = raw == `"2.0"` || raw[0] == '"' && stringValue(raw) == "2.0"
		}
	case "id":
		if e.seen&hasID == 0 {
			e.seen |= hasID
			e.idType, e.idRaw, e.idAt = typeOf(raw), raw, at
		}
	case "method":
		if e.seen&hasMethod == 0 {
			e.seen |= hasMethod
			e.methodType = typeOf(raw)
			if e.methodType == gjson.String {
				e.method = stringValue(raw)
			}
		}
	case "params":
		if e.seen&hasParams != 0 {
			// A second params (an Invalid message): gjson, reading a path
			// under params, goes on to it when the first lacks the rest,
			// so such reads walk the whole message.
			e.paramsLen = 0
			return
		}
		e.seen |= hasParams
		e.params = raw[0] == '{'
		if e.params {
			e.paramsAt, e.paramsLen = at, len(raw)
		}
	case "result":
		if e.seen&hasResult == 0 {
			e.seen |= hasResult
			e.result = raw[0] == '{'
		}
	case "error":
		if e.seen&hasError == 0 {
			e.seen |= hasError
			e.errRaw = raw
		}
	}
}

// typeOf returns the type of the valid JSON value raw.
func typeOf(raw string) gjson.Type {
	switch raw[0] {
	case '"':
		return gjson.String
	case 't':
		return gjson.True
	case 'f':
		return gjson.False
	case 'n':
		return gjson.Null
	case '{', '[':
		return gjson.JSON
	}
	return gjson.Number
}

// stringValue returns the text of the valid JSON string raw.
func stringValue(raw string) string {
	if strings.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	return gjson.Parse(raw).Str
}

// fromValid classifies raw, which must be valid, trimmed, single-line JSON
// that nobody will mutate, by the rules [EnvelopeError] lists.
func fromValid(raw []byte) Message {
	if raw[0] != '{' {
		return classify(raw, nil)
	}
	var e envelope
	view(raw).ForEach(func(k, v gjson.Result) bool {
		e.member(k.Str, v.Index, v.Raw)
		return true
	})
	return classify(raw, &e)
}

// classify returns raw as a Message of the kind its envelope e gives it (e
// is nil for what is not an object). It runs on every message: keep it
// cheap.
func classify(raw []byte, e *envelope) Message {
	m := Message{raw: raw}
	switch raw[0] {
	case '[':
		m.kind = Batch
		return m
	case '{':
	default:
		m.why = notJSONRPC
		return m
	}
	seen, version, idType, idRaw, methodType, method, params, result, errRaw :=
		e.seen, e.version, e.idType, e.idRaw, e.methodType, e.method, e.params, e.result, e.errRaw
	// The offsets are into raw, the bytes e was read from; a message past
	// 4 GiB keeps none (its reads walk it, as before).
	if e.paramsLen > 0 && uint64(e.paramsAt+e.paramsLen) <= math.MaxUint32 {
		m.paramsAt, m.paramsLen = uint32(e.paramsAt), uint32(e.paramsLen)
		if e.metaLen > 0 && e.metaAt > e.paramsAt && e.metaAt+e.metaLen < e.paramsAt+e.paramsLen {
			m.metaAt, m.metaLen, m.metaNames = uint32(e.metaAt-e.paramsAt), uint32(e.metaLen), e.metaNames
		}
	}
	if seen&hasID != 0 && uint64(e.idAt) <= math.MaxUint32 {
		m.idAt = uint32(e.idAt)
	}

	idOK := false // the id is one a request may have
	if seen&hasID != 0 {
		switch idType {
		case gjson.String:
			idOK = true
		case gjson.Number:
			idOK = digitsOnly(idRaw) || isInteger(idRaw)
		}
	}
	var shape Kind
	var why reason
	switch {
	case seen&hasMethod != 0 && methodType == gjson.String:
		shape = Notification
		if seen&hasID != 0 {
			shape = Request
		}
		switch {
		case !version:
			why = badVersion
		case shape == Request && !idOK:
			why = badRequestID
		case seen&hasParams != 0 && !params:
			why = badParams
		}
	case seen&(hasResult|hasError) != 0:
		shape = Result
		if seen&hasError != 0 {
			shape = Error
		}
		switch {
		case !version:
			why = badVersion
		case seen&hasResult != 0 && seen&hasError != 0:
			why = resultAndError
		case shape == Result && !idOK:
			why = badResultID
		case shape == Result && !result:
			why = badResult
		case shape == Error && seen&hasID != 0 && !idOK && idType != gjson.Null:
			why = badErrorID
		case shape == Error && !isErrorObject(errRaw):
			why = badError
		}
	case seen&hasMethod != 0:
		shape = Notification
		if seen&hasID != 0 {
			shape = Request
		}
		why = badMethod
	default:
		why = notJSONRPC
	}

	if why != validEnvelope {
		m.why, m.shape = why, shape
		if idOK {
			m.id = ID(strings.Clone(idRaw)) // to answer under
		}
		return m
	}
	m.kind = shape
	if seen&hasID != 0 {
		m.id = ID(strings.Clone(idRaw))
	}
	if shape == Request || shape == Notification {
		m.method = internMethod(method)
	}
	return m
}

// digitsOnly reports whether the JSON number n is written with digits and
// a sign only, as ids usually are: then it is an integer.
func digitsOnly(n string) bool {
	for i := 0; i < len(n); i++ {
		if c := n[i]; (c < '0' || c > '9') && (c != '-' || i > 0) {
			return false
		}
	}
	return true
}

// isInteger reports whether the JSON number n has no fractional part, which
// is what JSON Schema's "integer" asks: 7, -0, 1.0, 1.50e2 and 1e400 are
// integers; 1.5 and 1e-3 are not. n must be a valid JSON number.
func isInteger(n string) bool {
	i := 0
	if n[0] == '-' {
		i++
	}
	start := i
	for i < len(n) && n[i] >= '0' && n[i] <= '9' {
		i++
	}
	if i == len(n) {
		return true // the usual id: digits only
	}
	digits, frac := n[start:i], ""
	if n[i] == '.' {
		i++
		start = i
		for i < len(n) && n[i] >= '0' && n[i] <= '9' {
			i++
		}
		frac = n[start:i]
	}
	var exp int64
	if i < len(n) { // e or E, a sign, digits
		i++
		neg := n[i] == '-'
		if n[i] == '-' || n[i] == '+' {
			i++
		}
		for ; i < len(n); i++ {
			if exp < 1<<40 { // past this only the sign matters
				exp = exp*10 + int64(n[i]-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	// The value is digits.frac × 10^exp.
	if frac = strings.TrimRight(frac, "0"); frac != "" {
		// The last digit of frac is not 0: the point must move past it.
		return exp >= int64(len(frac))
	}
	if exp >= 0 {
		return true
	}
	d := strings.TrimLeft(digits, "0")
	if d == "" {
		return true // zero
	}
	zeros := len(d) - len(strings.TrimRight(d, "0"))
	return int64(zeros) >= -exp
}

// isErrorObject reports whether raw is a JSON-RPC error object: an object
// whose code is an integer and whose message is a string.
func isErrorObject(raw string) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	var seen uint8
	var code, message bool
	gjson.Parse(raw).ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "code" && seen&1 == 0:
			seen |= 1
			code = v.Type == gjson.Number && isInteger(v.Raw)
		case k.Str == "message" && seen&2 == 0:
			seen |= 2
			message = v.Type == gjson.String
		}
		return true
	})
	return code && message
}
