package gateway

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeCases are JSON-RPC messages, plain and not: decodeMessage must read each exactly as
// the SDK does.
var decodeCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"files_read","arguments":{"path":"a\"b\\c"}}}`,
	`{"jsonrpc":"2.0","id":"four","method":"tools/list"}`,
	`{"method":"notifications/initialized","jsonrpc":"2.0"}`,
	`{ "jsonrpc" : "2.0" , "id" : -42 , "method" : "ping" , "params" : null }`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":999999999999999,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":9999999999999999,"method":"ping"}`, // 16 digits: the SDK's
	`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"a\u0062","method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/list"}`,
	`{"jsonrpc":"2.0","id":1,"method":"héllo"}`,
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":"2.0","id":1,"method":7}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}`,
	`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	`{"jsonrpc":2.0,"id":1,"method":"ping"}`,
	`{"id":1,"method":"ping"}`,
	`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","Method":"ping","id":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"meth\u006fd":"tools/list","method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`,
	`"2.0"`,
	`[1]`,
	`null`,
	`{}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"` + strings.Repeat("[", 2000) + `"}}`,
}

func TestDecodeMessageIsTheSDKs(t *testing.T) {
	plain := 0
	for _, c := range decodeCases {
		if _, ok := plainRequest([]byte(c)); ok {
			plain++
		}
		sameAsSDK(t, []byte(c))
	}
	if plain < 8 {
		t.Errorf("only %d of the cases were decoded without the SDK", plain)
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // inspect hands decodeMessage valid JSON only
		}
		sameAsSDK(t, raw)
	})
}

// sameAsSDK checks that decodeMessage reads raw as jsonrpc.DecodeMessage does: the same
// request (method, id, params) or response, or an error for both.
func sameAsSDK(t *testing.T, raw []byte) {
	t.Helper()
	got, gotErr := decodeMessage(raw)
	want, wantErr := jsonrpc.DecodeMessage(raw)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("%.200s: error %v, the SDK's %v", raw, gotErr, wantErr)
	}
	if gotErr != nil {
		return
	}
	g, gok := got.(*jsonrpc.Request)
	w, wok := want.(*jsonrpc.Request)
	if gok != wok {
		t.Fatalf("%.200s: %T, the SDK's %T", raw, got, want)
	}
	if !gok {
		return
	}
	if g.Method != w.Method || !reflect.DeepEqual(g.ID.Raw(), w.ID.Raw()) || !sameParams(g.Params, w.Params) {
		t.Fatalf("%.200s: %q %#v %s, the SDK's %q %#v %s", raw, g.Method, g.ID.Raw(), g.Params, w.Method, w.ID.Raw(), w.Params)
	}
}

// sameParams: the same JSON text, absent and null being one (inspect reads them alike).
func sameParams(a, b json.RawMessage) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if string(a) == "null" {
		a = nil
	}
	if string(b) == "null" {
		b = nil
	}
	return bytes.Equal(a, b)
}
