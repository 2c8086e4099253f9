package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

var healthcheckCommand = command{
	name:    "healthcheck",
	summary: "exit 0 when a health endpoint answers 2xx, 1 otherwise",
	help: `
Sends one GET to --url and exits 0 on a 2xx answer. Images are built FROM
scratch, with no shell or curl, so their HEALTHCHECK runs this command. For a
NATS node, point it at the monitoring port: --url http://127.0.0.1:8222/healthz.`,
	new: func() runner { return new(healthcheckConfig) },
}

// healthcheckConfig holds the flags of `splash healthcheck`.
type healthcheckConfig struct {
	url     string
	timeout time.Duration
}

func (c *healthcheckConfig) flags(fs *flagSet) {
	fs.stringVar(&c.url, "url", "SPLASH_HEALTHCHECK_URL", defaultAPIURL+"/healthz", "health endpoint `url`")
	fs.durationVar(&c.timeout, "timeout", "SPLASH_HEALTHCHECK_TIMEOUT", 2*time.Second, "give up after this `duration`")
}

func (c *healthcheckConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return fmt.Errorf("%w: --url %q: %v", errUsage, c.url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnhealthy, err)
	}
	defer resp.Body.Close()
	// Drain a little so the connection closes cleanly; the body is not
	// needed, only the status.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: %s answered %s", errUnhealthy, c.url, resp.Status)
	}
	return nil
}
