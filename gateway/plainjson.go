package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lean hop writes a call's request to the upstream as it goes, instead of encoding it into
// a buffer first: for a call of 4 MB, encoding/json would build the whole document in its own
// pooled buffer (grown, and grown again after a collection) and then copy it into the request's.
// plainWriter writes the plain values a call's arguments are made of (what encoding/json
// decodes into any) straight to a writer, byte for byte as encoding/json's Encoder with HTML
// escaping off writes them: keys sorted, invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029
// escaped, numbers formatted alike. Any other type is handed to encoding/json. So what the
// upstream reads is exactly what it read before; only the copies are gone.

// plainWriter writes JSON to w, keeping the first error.
type plainWriter struct {
	w   *bufio.Writer
	n   int64 // bytes written
	err error
	num []byte // scratch for numbers

	scratch bytes.Buffer  // what enc writes
	enc     *json.Encoder // for values that are not plain
}

func (p *plainWriter) raw(s string) {
	if p.err == nil {
		var n int
		n, p.err = p.w.WriteString(s)
		p.n += int64(n)
	}
}

func (p *plainWriter) byte1(b byte) {
	if p.err == nil {
		p.err = p.w.WriteByte(b)
		p.n++
	}
}

const hexDigits = "0123456789abcdef"

// str writes s as a JSON string, as encoding/json does with HTML escaping off.
func (p *plainWriter) str(s string) {
	p.byte1('"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			p.raw(s[start:i])
			switch b {
			case '\\', '"':
				p.byte1('\\')
				p.byte1(b)
			case '\b':
				p.raw(`\b`)
			case '\f':
				p.raw(`\f`)
			case '\n':
				p.raw(`\n`)
			case '\r':
				p.raw(`\r`)
			case '\t':
				p.raw(`\t`)
			default:
				p.raw(`\u00`)
				p.byte1(hexDigits[b>>4])
				p.byte1(hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			p.raw(s[start:i])
			p.raw(`\ufffd`)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			p.raw(s[start:i])
			p.raw(`\u202`)
			p.byte1(hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	p.raw(s[start:])
	p.byte1('"')
}

// float writes f as encoding/json writes a float64.
func (p *plainWriter) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		if p.err == nil {
			p.err = fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
		}
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(p.num[:0], f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	p.num = b
	if p.err == nil {
		var n int
		n, p.err = p.w.Write(b)
		p.n += int64(n)
	}
}

// value writes v. Plain values are written here; anything else by encoding/json.
func (p *plainWriter) value(v any) {
	switch v := v.(type) {
	case nil:
		p.raw("null")
	case string:
		p.str(v)
	case bool:
		if v {
			p.raw("true")
		} else {
			p.raw("false")
		}
	case float64:
		p.float(v)
	case map[string]any:
		if v == nil {
			p.raw("null")
			return
		}
		p.byte1('{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				p.byte1(',')
			}
			p.str(k)
			p.byte1(':')
			p.value(v[k])
		}
		p.byte1('}')
	case []any:
		if v == nil {
			p.raw("null")
			return
		}
		p.byte1('[')
		for i, e := range v {
			if i > 0 {
				p.byte1(',')
			}
			p.value(e)
		}
		p.byte1(']')
	default:
		// Anything else is small (metadata, a typed value a binding put in): encoding/json
		// writes it, through a scratch buffer.
		if p.err != nil {
			return
		}
		if p.enc == nil {
			p.enc = json.NewEncoder(&p.scratch)
			p.enc.SetEscapeHTML(false)
		}
		p.scratch.Reset()
		if p.err = p.enc.Encode(v); p.err == nil {
			b := bytes.TrimSuffix(p.scratch.Bytes(), []byte("\n"))
			var n int
			n, p.err = p.w.Write(b)
			p.n += int64(n)
		}
	}
}

// callWriters pools the buffered writers that lean requests are written through.
var callWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// writeCall writes the tools/call request a lean call sends, byte for byte what an
// encoding/json Encoder (HTML escaping off) writes for it, and returns how many bytes it wrote.
func writeCall(w io.Writer, id, name string, args map[string]any, meta mcp.Meta) (int64, error) {
	bw := callWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() {
		bw.Reset(nil)
		callWriters.Put(bw)
	}()
	p := &plainWriter{w: bw}
	p.raw(`{"jsonrpc":"2.0","id":`)
	p.str(id)
	p.raw(`,"method":"tools/call","params":{`)
	if len(meta) > 0 {
		p.raw(`"_meta":`)
		p.value(meta)
		p.byte1(',')
	}
	p.raw(`"name":`)
	p.str(name)
	p.raw(`,"arguments":`)
	if args == nil {
		p.raw("{}")
	} else {
		p.value(args)
	}
	p.raw("}}\n")
	if p.err == nil {
		p.err = bw.Flush()
	}
	return p.n, p.err
}

// streamAbove is the size of arguments from which a lean call's request is streamed to the
// upstream rather than written into memory first.
const streamAbove = 64 << 10

// callBody is the body of a lean call and its length. A small request is written into memory;
// a large one is measured by writing it to nowhere, then written into the request as the
// transport sends it, so no stage holds a copy. finish must be called once the request is
// done: it ends the writer, which no longer reads args when it returns.
func callBody(id, name string, args map[string]any, meta mcp.Meta, size int) (body io.Reader, n int64, finish func(), err error) {
	if size < streamAbove {
		buf := bytes.NewBuffer(make([]byte, 0, size+len(name)+512))
		if n, err = writeCall(buf, id, name, args, meta); err != nil {
			return nil, 0, nil, err
		}
		return bytes.NewReader(buf.Bytes()), n, func() {}, nil
	}
	if n, err = writeCall(io.Discard, id, name, args, meta); err != nil {
		return nil, 0, nil, err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := writeCall(pw, id, name, args, meta)
		pw.CloseWithError(err)
	}()
	return pr, n, func() {
		pr.CloseWithError(errCallDone)
		<-done
	}, nil
}

// errCallDone ends the writer of a request whose call is over.
var errCallDone = fmt.Errorf("the call is over")
