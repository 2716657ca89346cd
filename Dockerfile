# Warden's container image: `docker build -t warden .`, then
#   docker run -p 8640:8640 -v warden-data:/data warden
# The store (SQLite) and the tenants' workspaces live in the /data volume. Give a PostgreSQL
# store and any other flag by environment (WARDEN_POSTGRES, WARDEN_POSTGRES_SCHEMA, ...).

# The build: a static binary. The SQLite driver (modernc.org/sqlite) is pure Go, so CGO is off.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/warden ./cmd/warden

# The run: bash and git for shell_exec and the git tools, nothing else, as a user of its own.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends bash ca-certificates git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin warden \
    && mkdir -p /data/workspaces && chown -R warden:warden /data
COPY --from=build /out/warden /usr/local/bin/warden
USER warden
WORKDIR /data
VOLUME /data
ENV WARDEN_DB=/data/warden.db WARDEN_WORKSPACES=/data/workspaces
EXPOSE 8640
ENTRYPOINT ["warden", "serve", "--addr", "0.0.0.0:8640"]
