package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lean path: a tools/call of an initialized session, in the plain shape every client sends
// (one JSON-RPC request in a POST, on a protocol version the lean hops speak), is served by
// Warden itself instead of going through the SDK's server, and answered with one JSON document.
// It runs the same pipeline (session.handle) with the same request: what the SDK's server adds
// for such a call is decoding (a 32 KB buffer for every value it reads), routing and encoding,
// which were a third of what a proxied call cost. Everything else, and any call whose shape
// this path does not take, goes to the SDK as before.
//
// What a call may send the client while it runs (progress while it waits for a person, an
// elicitation) Warden sends on the session's standalone stream in both paths, since neither
// is written in the context of the request; so answering with JSON loses nothing.

// leanParams are the params of a tools/call the lean path serves: the tool's name, its
// arguments (left as they came, for handle to decode as the SDK would hand them over), and
// _meta, decoded.
type leanParams struct {
	name string
	args json.RawMessage
	meta mcp.Meta
}

// leanTake reports whether r, whose body holds the one request req, is a call the lean path
// serves for session s, and its params.
func leanTake(r *http.Request, s *session, body []byte, req *jsonrpc.Request) (leanParams, bool) {
	if req.Method != "tools/call" || !req.ID.IsValid() || !s.ready.Load() || s.ss.Load() == nil {
		return leanParams{}, false
	}
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
		return leanParams{}, false // a batch
	}
	// The SDK refuses what these headers get wrong; it is left to do so, in its words.
	if media, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || media != "application/json" {
		return leanParams{}, false
	}
	if !acceptsBoth(r.Header.Values("Accept")) || len(r.Header.Values("Last-Event-ID")) > 0 {
		return leanParams{}, false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !leanVersion(v) {
		return leanParams{}, false
	}
	if p := s.ss.Load().InitializeParams(); p == nil || !leanVersion(p.ProtocolVersion) {
		return leanParams{}, false
	}
	return leanParse(req.Params)
}

// leanParse reads the params of a tools/call: an object whose keys, each once and unescaped,
// are name (printable ASCII, no escapes), and optionally arguments and _meta (an object, not
// one of the protocol version that carries the session in every request). Anything else is
// left to the SDK.
func leanParse(raw json.RawMessage) (leanParams, bool) {
	var p leanParams
	if tooDeep(raw, sdkMaxDepth) {
		return p, false
	}
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return p, false
	}
	var name, meta json.RawMessage
	var seenArgs bool
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] != '}'; {
		if raw[i] != '"' {
			return p, false
		}
		end := stringEnd(raw, i)
		key := raw[i+1 : end-1]
		if i = skipSpace(raw, end); i == len(raw) || raw[i] != ':' {
			return p, false
		}
		i = skipSpace(raw, i+1)
		vend := valueEnd(raw, i)
		v := raw[i:vend:vend]
		switch string(key) {
		case "name":
			if name != nil {
				return p, false
			}
			name = v
		case "arguments":
			if seenArgs {
				return p, false
			}
			seenArgs, p.args = true, v
		case "_meta":
			if meta != nil {
				return p, false
			}
			meta = v
		default:
			return p, false
		}
		if i = skipSpace(raw, vend); i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if name == nil || !plainString(name) {
		return p, false
	}
	p.name = string(name[1 : len(name)-1])
	if meta != nil && string(meta) != "null" {
		if meta[0] != '{' || json.Unmarshal(meta, &p.meta) != nil {
			return p, false
		}
		if _, ok := p.meta[mcp.MetaKeyProtocolVersion]; ok {
			return p, false
		}
	}
	return p, true
}

// acceptsBoth: the Accept header names JSON and event streams (as the SDK requires of a POST).
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// serveLean serves one call the lean path took, and answers it.
func (s *session) serveLean(w http.ResponseWriter, r *http.Request, id jsonrpc.ID, p leanParams) {
	req := &mcp.CallToolRequest{
		Session: s.ss.Load(),
		Params:  &mcp.CallToolParamsRaw{Meta: p.meta, Name: p.name, Arguments: p.args},
		Extra:   &mcp.RequestExtra{Header: r.Header},
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	idJSON := leanKey(id) // the id as JSON: the answer's, and the key a cancellation finds
	key := string(idJSON)
	s.mu.Lock()
	if s.leanCalls == nil {
		s.leanCalls = map[string]context.CancelCauseFunc{}
	}
	s.leanCalls[key] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.leanCalls, key)
		s.mu.Unlock()
	}()

	var res callOutcome
	var err error
	// The usage a call carries is recorded before it is judged, as middleware does.
	if refused := s.reportMeta(ctx, p.name, p.meta); refused != nil {
		res.sdk = refused
	} else {
		res, err = s.serveCall(ctx, req)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if sid := s.mcpID.Load(); sid != nil {
		h.Set("Mcp-Session-Id", *sid)
	}
	if err == nil && res.sdk == nil {
		if _, ok := textResult(res.plain); ok {
			// A result of text content only, the usual one, is encoded straight into the
			// response: a large result is not copied again on its way out.
			w.WriteHeader(http.StatusOK)
			w.Write(append(append([]byte(`{"jsonrpc":"2.0","id":`), idJSON...), `,"result":`...))
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(res.plain); err != nil {
				// Only a value JSON cannot hold fails here, and decoded JSON holds none;
				// the response is cut short, which the client sees as a broken answer.
				s.g.logger.Error("a result could not be written", "tool", p.name, "err", err)
				return
			}
			w.Write([]byte("}"))
			return
		}
	}
	var result []byte
	if err == nil {
		result, err = res.encode()
	}
	msg := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *jsonrpc.Error  `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: idJSON, Result: result}
	if err != nil {
		// As the SDK answers a handler's error: its own code if it is a JSON-RPC error.
		msg.Error = &jsonrpc.Error{Message: err.Error()}
		var wire *jsonrpc.Error
		if errors.As(err, &wire) {
			msg.Error.Code = wire.Code
		}
	}
	out, err := json.Marshal(msg)
	if err != nil {
		out, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id.Raw(),
			"error": map[string]any{"code": jsonrpc.CodeInternalError, "message": "the result could not be encoded: " + err.Error()}})
	}
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// leanKey is a call's JSON-RPC id as JSON, by which it is found again when the client
// cancels it.
func leanKey(id jsonrpc.ID) []byte {
	b, _ := json.Marshal(id.Raw())
	return b
}

// cancelLean ends the lean calls a body's notifications/cancelled name: the SDK would end
// its own, and does not know these.
func (s *session) cancelLean(msgs []*jsonrpc.Request) {
	for _, m := range msgs {
		if m.Method != "notifications/cancelled" || m.ID.IsValid() {
			continue
		}
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if json.Unmarshal(m.Params, &p) != nil || len(p.RequestID) == 0 {
			continue
		}
		var v any
		if json.Unmarshal(p.RequestID, &v) != nil {
			continue
		}
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			continue
		}
		s.mu.Lock()
		cancel := s.leanCalls[string(leanKey(id))]
		s.mu.Unlock()
		if cancel != nil {
			reason := "the client cancelled the call"
			if p.Reason != "" {
				reason += ": " + p.Reason
			}
			cancel(errors.New(reason))
		}
	}
}

// A callOutcome is what a call gives its client: the result the gate passed back, in plain
// form (decoded JSON), or one Warden made itself (a refusal).
type callOutcome struct {
	plain map[string]any
	sdk   *mcp.CallToolResult
}

// toSDK is the result in the SDK's type.
func (c callOutcome) toSDK() (*mcp.CallToolResult, error) {
	if c.sdk != nil {
		return c.sdk, nil
	}
	return toResult(c.plain)
}

// encode is the result as the SDK would write it: a result of text content only as it is,
// anything else read into the SDK's type first (which checks it, as the SDK path does).
func (c callOutcome) encode() ([]byte, error) {
	if c.sdk == nil {
		if _, ok := textResult(c.plain); ok {
			return json.Marshal(c.plain)
		}
	}
	r, err := c.toSDK()
	if err != nil {
		return nil, err
	}
	if r.Content == nil {
		r.Content = []mcp.Content{} // as the SDK's server writes it
	}
	return json.Marshal(r)
}

// enter and leave bracket every POST of the session: a session with none for the idle timeout
// is closed (as the SDK's own timer would, which cannot see the calls of the lean path).
func (s *session) enter() {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	s.idleRefs++
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
}

func (s *session) leave() {
	d := s.g.o.IdleTimeout
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	if s.idleRefs--; s.idleRefs > 0 || d <= 0 {
		return
	}
	if s.idleTimer == nil {
		s.idleTimer = time.AfterFunc(d, s.idle)
	} else {
		s.idleTimer.Reset(d)
	}
}

// idle closes a session that has been idle for the timeout.
func (s *session) idle() {
	s.idleMu.Lock()
	busy := s.idleRefs > 0
	s.idleMu.Unlock()
	if busy {
		return // a request came in as the timer fired
	}
	// Kept in the store, the session lives on for the other instances: only this copy ends.
	s.drop(context.Background(), errIdle)
	if ss := s.ss.Load(); ss != nil {
		_ = ss.Close()
	}
}
