package interop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// listen serves h on a loopback port for the test and returns its base URL.
func listen(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// refused is the base URL of a port nothing listens on any more.
func refused(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "text/plain", strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Each request goes to the next backend, its body intact; a backend that refuses the
// connection is passed over; one that takes the request and dies is not sent it again.
func TestRoundRobin(t *testing.T) {
	var hits [3]atomic.Int32
	named := func(i int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%d:%s", i, b)
		})
	}
	dies := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits[2].Add(1)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	backends := []string{listen(t, named(0)), listen(t, named(1)), refused(t), listen(t, dies)}
	p, err := NewRoundRobin(backends, true)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	url := listen(t, p)

	// 0, 1, then the refused one passes its request on to 3, which dies with it; then 3 again,
	// and 0.
	want := []struct {
		code int
		body string
	}{{200, "0:body"}, {200, "1:body"}, {502, ""}, {502, ""}, {200, "0:body"}}
	for i, w := range want {
		if code, body := get(t, url); code != w.code || body != w.body {
			t.Errorf("request %d: %d %q, want %d %q", i, code, body, w.code, w.body)
		}
	}
	if hits[0].Load() != 2 || hits[1].Load() != 1 || hits[2].Load() != 2 {
		t.Errorf("hits %d %d, and the dying backend %d (want 2 1 2): a request that reached a backend was sent again, or one was lost",
			hits[0].Load(), hits[1].Load(), hits[2].Load())
	}
	hops := p.Hops()
	if len(hops) != 5 || hops[2].Backend != 3 || hops[2].Err == "" || hops[2].Status != 0 || hops[4].Backend != 0 {
		t.Errorf("the hops: %+v", hops)
	}
}

// An event stream reaches the client as each event is written, not when the response ends,
// and is counted as open while it lasts.
func TestRoundRobinStreams(t *testing.T) {
	release := make(chan struct{})
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: last\n\n")
	})
	p, err := NewRoundRobin([]string{listen(t, backend)}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	resp, err := http.Get(listen(t, p))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("the first event, while the backend still writes: %q, %v", line, err)
	}
	if s := p.Streams(); s[0] != 1 {
		t.Errorf("open streams %v while one is open", s)
	}
	close(release)
	rest, _ := io.ReadAll(rd)
	if string(rest) != "\ndata: last\n\n" {
		t.Errorf("the rest: %q", rest)
	}
	if err := p.Wait(context.Background(), func(_ []Hop, s []int) bool { return s[0] == 0 }); err != nil {
		t.Fatal(err)
	}
}
