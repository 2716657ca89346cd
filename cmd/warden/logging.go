package main

import (
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// logOptions are serve's and mcp's --log-format and --log-level.
type logOptions struct {
	format string
	level  string
	flags  *pflag.FlagSet
}

func (o *logOptions) register(cmd *cobra.Command, level string) {
	o.flags = cmd.Flags()
	cmd.Flags().StringVar(&o.format, "log-format", "text", "the log's format: text (key=value) or json (one object a line)")
	cmd.Flags().StringVar(&o.level, "log-level", level, "the least severe log records written: debug, info, warn or error")
}

// logger returns the logger the flags ask for, writing to w; a format or level it does not
// know is a usage error.
func (o *logOptions) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	switch strings.ToLower(o.level) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, usagef("%s %q: want debug, info, warn or error", flagOrigin(o.flags, "log-level"), o.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(o.format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, usagef("%s %q: want text or json", flagOrigin(o.flags, "log-format"), o.format)
	}
}
