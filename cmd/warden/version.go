package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/gateway"
)

// buildInfo is what `warden version` reports: which build of Warden this is.
type buildInfo struct {
	// Version is the implementation version Warden reports to MCP peers (gateway.Version).
	Version string `json:"version"`
	// Module is the module version the binary was built at: a tag, a pseudo-version, or
	// "(devel)" for a build from a work tree.
	Module string `json:"module"`
	// Revision, Time and Modified are the VCS commit the binary was built from, its time, and
	// whether the work tree had changes; empty when the build recorded none (go run, go test).
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readBuildInfo reads the binary's build information.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: gateway.Version, Module: "unknown", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if info.Main.Version != "" {
		b.Module = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print Warden's version and the VCS revision it was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := readBuildInfo()
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(b)
			}
			fmt.Fprintf(w, "warden %s (module %s)\n", b.Version, b.Module)
			switch {
			case b.Revision == "":
				fmt.Fprintln(w, "revision: unknown (built without VCS information)")
			case b.Modified:
				fmt.Fprintf(w, "revision: %s (%s), with uncommitted changes\n", b.Revision, b.Time)
			default:
				fmt.Fprintf(w, "revision: %s (%s)\n", b.Revision, b.Time)
			}
			fmt.Fprintf(w, "built with %s for %s\n", b.Go, b.Platform)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print it as JSON")
	return cmd
}
