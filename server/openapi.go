package server

import (
	_ "embed"
	"net/http"
)

// openapiJSON is the OpenAPI 3.1 description of every route in routes. TestOpenAPI keeps the
// two the same, and checks real answers against its schemas.
//
//go:embed openapi.json
var openapiJSON []byte

// OpenAPI returns the OpenAPI 3.1 document that describes the server's API (a copy).
func OpenAPI() []byte { return append([]byte(nil), openapiJSON...) }

// openapi serves the API's description. It needs no token: it holds no data of anyone's.
func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openapiJSON)
}
