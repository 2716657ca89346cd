package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// stdioPipe sits between `warden mcp`'s standard streams and the SDK's transport, so that a
// client that writes its requests and closes its input (printf '...' | warden mcp) gets every
// answer: the end of the input is passed on only once every request read before it has been
// answered (the SDK ends the session at the end of its input, dropping what is in flight),
// and after an initialize nothing more is read until it is answered, as a client that waits
// for the handshake would. The wait ends early when ctx does.
type stdioPipe struct {
	ctx context.Context
	in  *bufio.Reader
	out io.Writer

	buf []byte // the rest of the line being read

	mu      sync.Mutex
	pending map[string]bool // the ids of the requests read and not yet answered
	init    string          // the id of an initialize not yet answered, or ""
	changed chan struct{}   // closed, and replaced, when an answer is written
	partial []byte          // the start of a line written without its end
}

func newStdioPipe(ctx context.Context, in io.Reader, out io.Writer) *stdioPipe {
	return &stdioPipe{ctx: ctx, in: bufio.NewReaderSize(in, 64<<10), out: out, pending: map[string]bool{}, changed: make(chan struct{})}
}

// Read passes the input on a line at a time (each line is one JSON-RPC message or batch).
func (p *stdioPipe) Read(b []byte) (int, error) {
	if len(p.buf) == 0 {
		if err := p.waitFor(func() bool { return p.init == "" }); err != nil {
			return 0, err
		}
		line, err := p.in.ReadBytes('\n')
		if len(line) > 0 {
			p.note(line)
			p.buf = line
		} else if err != nil {
			if errors.Is(err, io.EOF) {
				// Every request read is answered before the SDK hears of the end.
				if werr := p.waitFor(func() bool { return len(p.pending) == 0 }); werr != nil {
					return 0, werr
				}
			}
			return 0, err
		}
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}

// waitFor waits until done holds (under p.mu) or the context ends.
func (p *stdioPipe) waitFor(done func() bool) error {
	for {
		p.mu.Lock()
		ok, ch := done(), p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
}

// note records the requests of a line read: the messages with a method and an id.
func (p *stdioPipe) note(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range messages(line) {
		if m.Method == "" || m.ID == nil {
			continue
		}
		id := idKey(m.ID)
		p.pending[id] = true
		if m.Method == "initialize" {
			p.init = id
		}
	}
}

// Write passes the output on, and notes the answers in it.
func (p *stdioPipe) Write(b []byte) (int, error) {
	n, err := p.out.Write(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b[:n]...)
	answered := false
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		for _, m := range messages(p.partial[:i]) {
			if m.Method != "" || m.ID == nil {
				continue // a request or notification of the server's own
			}
			id := idKey(m.ID)
			delete(p.pending, id)
			if id == p.init {
				p.init = ""
			}
			answered = true
		}
		p.partial = p.partial[i+1:]
	}
	if len(p.partial) == 0 {
		p.partial = nil
	}
	if answered {
		close(p.changed)
		p.changed = make(chan struct{})
	}
	return n, err
}

// A wireMessage is what the pipe reads of a JSON-RPC message.
type wireMessage struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
}

// messages decodes a line as one message or a batch; anything else is no message.
func messages(line []byte) []wireMessage {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if line[0] == '[' {
		var batch []wireMessage
		if json.Unmarshal(line, &batch) != nil {
			return nil
		}
		return batch
	}
	var m wireMessage
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []wireMessage{m}
}

// idKey is an id's canonical form (the SDK may write a number back differently).
func idKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// stdioReader and stdioWriter are the pipe's two ends, closing the streams they stand for.
type (
	stdioReader struct {
		*stdioPipe
		io.Closer
	}
	stdioWriter struct {
		*stdioPipe
		io.Closer
	}
)

// Read is the pipe's (the embedded Closer has none, but says so for the compiler).
func (r stdioReader) Read(b []byte) (int, error) { return r.stdioPipe.Read(b) }

// Write is the pipe's.
func (w stdioWriter) Write(b []byte) (int, error) { return w.stdioPipe.Write(b) }
