package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/wardenhq/warden/metrics"
)

// /metrics spans every tenant (their names, tools and spending), so on serve's own address it
// answers only an admin token, as the rest of the API answers only a token that may see what
// it asks for. A Prometheus that should not hold an admin token scrapes --metrics-addr
// instead: a listener of its own that serves /metrics and nothing else, with no token, for an
// address only the monitoring network reaches (a loopback address, a private interface).

// metricsServer is the --metrics-addr listener.
type metricsServer struct {
	addr string
	hs   *http.Server
}

// serveMetrics serves m at /metrics on addr until Close.
func serveMetrics(addr string, m *metrics.Metrics, logger *slog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go func() { _ = hs.Serve(ln) }()
	return &metricsServer{addr: ln.Addr().String(), hs: hs}, nil
}

// Close stops the listener.
func (s *metricsServer) Close() error { return s.hs.Close() }
