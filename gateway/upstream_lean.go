package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lean hop: a tools/call to an HTTP upstream is one POST written and read by Warden itself,
// on the session the SDK's client opened (its Mcp-Session-Id and negotiated protocol version).
// The SDK decodes every value through a decoder that allocates 32 KB, and would decode the
// result into its types only for Warden to turn it back into plain JSON; reading the answer
// here, once, into the plain form that protection walks, costs a fraction of that. Everything
// else (initialize, lists, resources, prompts, subscriptions, the standalone stream, stdio
// upstreams, and protocol versions this path does not speak) stays with the SDK, and so does a
// call whenever the lean hop cannot be sure to behave as the SDK would.

// leanVersions are the protocol versions whose tools/call over streamable HTTP the lean hops
// speak: one JSON-RPC request in a POST, answered with one JSON document or an SSE stream.
// Later versions change the request's shape (standard headers, _meta), and are left to the SDK.
func leanVersion(v string) bool {
	switch v {
	case "2025-03-26", "2025-06-18", "2025-11-25":
		return true
	}
	return false
}

// errSessionGone: the upstream answered 404 to the session's id, so it has forgotten the
// session (it restarted, or reaped it); the connection is dropped and the next call dials again.
var errSessionGone = errors.New("the upstream no longer knows the session (connection closed)")

// leanSeq numbers the lean hop's requests. Its ids are strings ("warden-N") and the SDK's client
// numbers its own, so the two never meet on one session.
var leanSeq atomic.Uint64

// maxUpstreamAnswer bounds what one upstream answer may hold: an answer larger than this is
// refused rather than held in memory whole.
const maxUpstreamAnswer = 64 << 20

// leanCapable reports whether a call on cs can take the lean hop, and with which version.
func (u *upstream) leanCapable(cs *mcp.ClientSession) (string, bool) {
	if u.hc == nil || cs == nil || cs.ID() == "" {
		return "", false
	}
	r := cs.InitializeResult()
	if r == nil || !leanVersion(r.ProtocolVersion) {
		return "", false
	}
	return r.ProtocolVersion, true
}

// leanCall makes one tools/call on cs's session and returns its result in plain form (decoded
// JSON). An error that says the connection broke wraps errSessionGone or io.ErrUnexpectedEOF,
// which isBroken knows.
func (u *upstream) leanCall(ctx context.Context, cs *mcp.ClientSession, version, name string, args map[string]any, meta mcp.Meta, size int) (map[string]any, error) {
	id := "warden-" + strconv.FormatUint(leanSeq.Add(1), 36)
	// Written as the transport sends it (see callBody): a large call is never held whole.
	body, n, finish, err := callBody(id, name, args, meta, size)
	if err != nil {
		return nil, fmt.Errorf("the call's arguments cannot be encoded: %w", err)
	}
	defer finish()
	// The request runs on a context of its own, which the caller's ending cancels until the
	// answer is in: after it, the rest of an event stream is read in the background (see
	// drainStream), which the caller's context, ended by then, must not cut short.
	reqCtx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	unlink := context.AfterFunc(ctx, func() { stop(context.Cause(ctx)) })
	resp, err := u.leanPost(reqCtx, cs, version, body, n)
	if err != nil {
		unlink()
		stop(nil)
		return nil, err
	}
	drain := false
	defer func() {
		if drain && unlink() {
			go u.drainStream(resp.Body, stop)
			return
		}
		resp.Body.Close()
		stop(nil)
	}()
	answered := false
	defer func() {
		if !answered && ctx.Err() != nil {
			// The caller gave up: tell the upstream, as the SDK would, so it can stop.
			go u.leanCancel(cs, version, id, context.Cause(ctx))
		}
	}()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w (HTTP 404)", errSessionGone)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("the upstream answered HTTP %d: %s", resp.StatusCode, snippet(resp.Body))
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var msg json.RawMessage
	switch media {
	case "application/json":
		// Read into a buffer of the announced length, where there is one: io.ReadAll would
		// double its way there.
		buf := bytes.NewBuffer(make([]byte, 0, min(max(resp.ContentLength, 0), maxUpstreamAnswer)+bytes.MinRead))
		_, err = buf.ReadFrom(io.LimitReader(resp.Body, maxUpstreamAnswer+1))
		msg = buf.Bytes()
		if err == nil && len(msg) > maxUpstreamAnswer {
			err = fmt.Errorf("the upstream's answer is larger than %d bytes", maxUpstreamAnswer)
		}
	case "text/event-stream":
		msg, err = u.leanStream(ctx, cs, version, id, resp.Body)
		drain = err == nil && !u.openStreams.Load()
	default:
		return nil, fmt.Errorf("the upstream answered with content type %q, not JSON or an event stream", media)
	}
	if err != nil {
		return nil, err
	}
	res, err := leanResult(msg, id)
	if err == nil {
		answered = true
	}
	return res, err
}

// An upstream that answers a call with an event stream ends the stream after its response, a
// moment later (the end of the chunked body comes in a write of its own). The HTTP client
// reuses a connection only when its response was read to the end: closed before, the
// connection is closed with it, and the next call dials again (a call in ten did, at one client
// in BenchmarkToolsCall). So drainStream reads the rest of the stream in the background, for
// at most drainFor and drainBytes, and then closes it. An upstream whose streams outlast that
// bound drainStrikes times in a row (once could be a slow moment of a loaded machine) is one
// that keeps its streams open: from then on, its streams are closed at once after the
// response (upstream.openStreams), as they were before.
const (
	drainFor     = 250 * time.Millisecond
	drainBytes   = 64 << 10
	drainStrikes = 3
)

// drainStream reads body to its end (within drainFor and drainBytes), closes it, and ends its
// request's context with stop.
func (u *upstream) drainStream(body io.ReadCloser, stop context.CancelCauseFunc) {
	var late atomic.Bool
	t := time.AfterFunc(drainFor, func() {
		late.Store(true)
		if u.drainTimeouts.Add(1) >= drainStrikes {
			u.openStreams.Store(true)
		}
		stop(errDrainTimeout)
	})
	// A stream that breaks is closed as one that ends: only its length or the time says the
	// upstream keeps streams open.
	n, _ := io.Copy(io.Discard, io.LimitReader(body, drainBytes))
	t.Stop()
	switch {
	case n == drainBytes:
		u.openStreams.Store(true)
	case !late.Load():
		u.drainTimeouts.Store(0)
	}
	body.Close()
	stop(nil)
}

// errDrainTimeout ends a stream drainStream waited on for too long.
var errDrainTimeout = errors.New("the upstream kept its event stream open after the response")

// leanPost sends one JSON-RPC message on cs's session.
func (u *upstream) leanPost(ctx context.Context, cs *mcp.ClientSession, version string, body io.Reader, n int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.server.Upstream.URL, body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = n
	req.Header = http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Session-Id":       {cs.ID()},
		"Mcp-Protocol-Version": {version},
	}
	return u.hc.Do(req)
}

// leanCancel tells the upstream that the caller no longer waits for request id.
func (u *upstream) leanCancel(cs *mcp.ClientSession, version, id string, why error) {
	reason := "the caller gave up"
	if why != nil {
		reason = why.Error()
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": reason}})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), u.server.Upstream.Timeout)
	defer cancel()
	if resp, err := u.leanPost(ctx, cs, version, bytes.NewReader(body), int64(len(body))); err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}

// leanStream reads an SSE answer until the response to id, and returns it. What else the
// upstream sends on the stream is dealt with as the SDK's client would: list changes refresh
// the catalog, resource updates reach subscribers, a ping is answered, and any other request
// of the upstream is answered that the client does not support it.
func (u *upstream) leanStream(ctx context.Context, cs *mcp.ClientSession, version, id string, body io.Reader) (json.RawMessage, error) {
	br := bufio.NewReaderSize(body, 4096)
	var data []byte
	var event string
	for {
		line, err := readLine(br, maxUpstreamAnswer)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("the upstream ended its event stream before answering: %w", io.ErrUnexpectedEOF)
			}
			return nil, err
		}
		switch {
		case len(line) == 0:
			// The end of an event.
			if len(data) > 0 && (event == "" || event == "message") {
				if msg, done := u.leanEvent(ctx, cs, version, id, data); done {
					return msg, nil
				}
			}
			data, event = data[:0], ""
		case line[0] == ':':
			// A comment (a keep-alive).
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				if len(data) > 0 {
					data = append(data, '\n')
				}
				if len(data)+len(value) > maxUpstreamAnswer {
					return nil, fmt.Errorf("an event of the upstream's stream is larger than %d bytes", maxUpstreamAnswer)
				}
				data = append(data, value...)
			case "event":
				event = string(value)
			}
		}
	}
}

// readLine reads one line of an event stream without its end (\n or \r\n), up to max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max+2 {
			return nil, fmt.Errorf("a line of the upstream's event stream is longer than %d bytes", max)
		}
		if err == bufio.ErrBufferFull {
			line = append(line, chunk...)
			continue
		}
		if err != nil {
			if len(line)+len(chunk) > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if line == nil {
			line = chunk
		} else {
			line = append(line, chunk...)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		return bytes.TrimSuffix(line, []byte("\r")), nil
	}
}

// leanEvent deals with one message of the stream; done is set when it is the response to id
// (then msg is a copy of it).
func (u *upstream) leanEvent(ctx context.Context, cs *mcp.ClientSession, version, id string, data []byte) (msg json.RawMessage, done bool) {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &head) != nil {
		return nil, false // not for us to judge: the SDK's client would drop it too
	}
	if head.Method == "" {
		var got string
		if json.Unmarshal(head.ID, &got) == nil && got == id {
			return data, true // the stream is read no further: data is not reused
		}
		return nil, false
	}
	if len(head.ID) == 0 || string(head.ID) == "null" {
		u.leanNotification(head.Method, head.Params)
		return nil, false
	}
	// A request of the upstream's, related to the call.
	var result any
	var rpcErr *jsonrpc.Error
	switch head.Method {
	case "ping":
		result = struct{}{}
	case "roots/list":
		result = map[string]any{"roots": []any{}}
	default:
		rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("Warden's client does not support %s", head.Method)}
	}
	reply := map[string]any{"jsonrpc": "2.0", "id": head.ID}
	if rpcErr != nil {
		reply["error"] = map[string]any{"code": rpcErr.Code, "message": rpcErr.Message}
	} else {
		reply["result"] = result
	}
	if b, err := json.Marshal(reply); err == nil {
		if resp, err := u.leanPost(ctx, cs, version, bytes.NewReader(b), int64(len(b))); err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
		}
	}
	return nil, false
}

// leanNotification does what the SDK's client does with a notification of the upstream's.
func (u *upstream) leanNotification(method string, params json.RawMessage) {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		go u.refresh()
	case "notifications/resources/updated":
		var p mcp.ResourceUpdatedNotificationParams
		if json.Unmarshal(params, &p) == nil && u.onUpdate != nil {
			u.onUpdate(&p)
		}
	}
}

// leanResult reads a JSON-RPC response to id: its result, decoded, or its error.
func leanResult(msg json.RawMessage, id string) (map[string]any, error) {
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  map[string]any  `json:"result"`
		Error   *struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &resp); err != nil {
		return nil, fmt.Errorf("the upstream's answer is not JSON-RPC: %v", err)
	}
	var got string
	if resp.JSONRPC != "2.0" || json.Unmarshal(resp.ID, &got) != nil || got != id {
		return nil, errors.New("the upstream's answer is not a JSON-RPC 2.0 response to the call")
	}
	if resp.Error != nil {
		// In the words the SDK's client uses for an error answer.
		return nil, fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data})
	}
	if resp.Result == nil {
		return nil, errors.New("the upstream's answer holds no result object")
	}
	return resp.Result, nil
}

// snippet is the start of an error body, for a message.
func snippet(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 512))
	return strings.TrimSpace(string(b))
}
