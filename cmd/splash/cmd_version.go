package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at link time by scripts/build-image.sh
// (-ldflags "-X main.version=…"); a plain `go build` leaves "dev".
var version = "dev"

var versionCommand = command{
	name:    "version",
	summary: "print the version of this binary",
	new:     func() runner { return new(versionConfig) },
}

// versionConfig has no flags of its own; the type exists so version is a
// command like any other.
type versionConfig struct{}

func (*versionConfig) flags(*flagSet) {}

func (*versionConfig) run(_ context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	_, err := fmt.Fprintf(a.stdout, "splash %s%s %s %s/%s\n", version, revision(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}

// revision reports the commit the binary was built from, when the go tool
// recorded one.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return " (" + rev + dirty + ")"
}
