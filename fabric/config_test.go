package fabric_test

import (
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*fabric.Config)
		wantErr error
	}{
		{"default", func(*fabric.Config) {}, nil},
		{"three replicas", func(c *fabric.Config) { c.Replicas = 3 }, nil},
		{"zero replicas", func(c *fabric.Config) { c.Replicas = 0 }, fabric.ErrInvalidConfig},
		{"six replicas", func(c *fabric.Config) { c.Replicas = 6 }, fabric.ErrInvalidConfig},
		{"zero ack wait", func(c *fabric.Config) { c.AckWait = 0 }, fabric.ErrInvalidConfig},
		{"zero max deliver", func(c *fabric.Config) { c.MaxDeliver = 0 }, fabric.ErrInvalidConfig},
		{"zero max ack pending", func(c *fabric.Config) { c.MaxAckPending = 0 }, fabric.ErrInvalidConfig},
		{"zero duplicate window", func(c *fabric.Config) { c.DuplicateWindow = 0 }, fabric.ErrInvalidConfig},
		{"tiny max msg size", func(c *fabric.Config) { c.MaxMsgSize = 10 }, fabric.ErrInvalidConfig},
		{"zero events max age", func(c *fabric.Config) { c.EventsMaxAge = 0 }, fabric.ErrInvalidConfig},
		{"zero dedupe horizon", func(c *fabric.Config) { c.DedupeHorizon = 0 }, fabric.ErrInvalidConfig},
		{"zero session retention", func(c *fabric.Config) { c.SessionRetention = 0 }, fabric.ErrInvalidConfig},
		{"session retention below the floor", func(c *fabric.Config) { c.SessionRetention = time.Second }, fabric.ErrInvalidConfig},
		{"short session retention", func(c *fabric.Config) { c.SessionRetention = 4 * time.Second }, nil},
		{"unknown storage", func(c *fabric.Config) { c.Storage = 7 }, fabric.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fabric.DefaultConfig()
			tt.mutate(&cfg)
			fabrictest.WantErrIs(t, cfg.Validate(), tt.wantErr)
		})
	}
}
