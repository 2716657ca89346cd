package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodeCall is how the lean hop encoded a call before plainWriter: the reference it must
// match byte for byte.
func encodeCall(t testing.TB, id, name string, args map[string]any, meta mcp.Meta) []byte {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      string `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", id, "tools/call", struct {
		Meta      mcp.Meta       `json:"_meta,omitempty"`
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}{meta, name, args}})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func checkWriteCall(t testing.TB, args map[string]any, meta mcp.Meta) {
	t.Helper()
	want := encodeCall(t, "warden-1", "mcp__up__echo", args, meta)
	var got bytes.Buffer
	n, err := writeCall(&got, "warden-1", "mcp__up__echo", args, meta)
	if err != nil {
		t.Fatalf("writeCall: %v", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("writeCall wrote\n%q\nencoding/json writes\n%q", got.Bytes(), want)
	}
	if n != int64(len(want)) {
		t.Fatalf("writeCall counted %d bytes, wrote %d", n, len(want))
	}
}

type typed struct {
	Z string `json:"z"`
	A int    `json:"a"`
}

func TestWriteCallWritesWhatEncodingJSONWrites(t *testing.T) {
	var all strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		all.WriteRune(r)
	}
	for _, args := range []map[string]any{
		nil,
		{},
		{"msg": "hello <world> & \"quoted\" \\ back"},
		{"ctl": "\x00\x01\b\f\n\r\t\x1f\x7f", "sep": "\u2028 \u2029", "bad": "\xff\xfe a \xc3 b \xed\xa0\x80"},
		{"every rune": all.String()},
		{"n": 0.0, "neg": math.Copysign(0, -1), "small": 1e-7, "edge": 1e-6, "big": 1e21, "under": 1e20, "pi": math.Pi, "int": 42.0, "huge": 1.7976931348623157e308, "tiny": 5e-324},
		{"nested": map[string]any{"b": []any{1.0, "x", nil, true, false, map[string]any{}}, "a": []any{}}, "nil map": map[string]any(nil), "nil list": []any(nil)},
		{"zzz": 1.0, "aaa": 2.0, "M": 3.0, "é": 4.0, "<": 5.0, "": 6.0},
		{"typed": typed{"<z>", 3}, "number": json.Number("12345678901234567890"), "raw": json.RawMessage(`{"b":1,  "a":"<"}`)},
	} {
		checkWriteCall(t, args, nil)
	}
	checkWriteCall(t, map[string]any{"x": "y"}, mcp.Meta{"progressToken": "p<1>", "warden/run": map[string]any{"b": 1.0, "a": "x"}})
}

func TestWriteCallRefusesWhatJSONCannotHold(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"f": math.Inf(-1)}, func() {}} {
		if _, err := writeCall(io.Discard, "warden-1", "t", map[string]any{"v": v}, nil); err == nil {
			t.Errorf("writeCall of %v: no error", v)
		}
	}
}

// FuzzWriteCall decodes arbitrary JSON as the gateway decodes a call's arguments and wants
// writeCall to write exactly what encoding/json writes for it.
func FuzzWriteCall(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `{"x":[1,2.5e-9,null,{"y":"\u2028"}]}`, `{"s":"\ud800"}`, "{\"s\":\"\xff\"}", `{"n":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var args map[string]any
		if json.Unmarshal(data, &args) != nil {
			return
		}
		checkWriteCall(t, args, nil)
	})
}

// TestCallBodyStreamsLargeCalls: a large call's body is the same bytes, with its length known
// before it is written, and finish ends the writer even when nobody read the body.
func TestCallBodyStreamsLargeCalls(t *testing.T) {
	args := map[string]any{"msg": strings.Repeat("x<\u2028", streamAbove)}
	want := encodeCall(t, "warden-2", "mcp__up__echo", args, nil)
	body, n, finish, err := callBody("warden-2", "mcp__up__echo", args, nil, len(want))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := body.(*bytes.Reader); ok {
		t.Fatal("a large call was written into memory, not streamed")
	}
	got, err := io.ReadAll(body)
	finish()
	if err != nil || !bytes.Equal(got, want) || n != int64(len(want)) {
		t.Fatalf("streamed %d bytes (announced %d, err %v), want the %d encoding/json writes", len(got), n, err, len(want))
	}
	// Unread: finish must still return (the writer ends).
	_, _, finish, err = callBody("warden-3", "mcp__up__echo", args, nil, len(want))
	if err != nil {
		t.Fatal(err)
	}
	finish()
}
