package httpapi

import (
	"context"
	"log/slog"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
)

// Waiter tells which live operations no worker holds yet.
// *hostnats.HostTransport satisfies it.
type Waiter interface {
	// Waiting reports, of requestIDs, those no worker has been handed.
	Waiting(ctx context.Context, requestIDs []string) (map[string]bool, error)
}

// The runtime calls an operation claimed as soon as the host publishes
// it, which says nothing of whether a worker took it: under load most
// "claimed" operations sit in their stream. The API reports those as
// queued. Operations a worker has answered for are held, so only the
// silent claimed ones are asked about.

// markQueued rewrites to "queued" the claimed operations of ops that no
// worker holds yet. When the question cannot be answered the states stay
// the runtime's, and the failure is logged.
func (s *server) markQueued(ctx context.Context, ops []apiwire.Operation) {
	if s.cfg.Waiting == nil {
		return
	}
	var ask []string
	for _, o := range ops {
		if o.State == host.Claimed.String() && o.Worker == "" {
			ask = append(ask, o.RequestID)
		}
	}
	if len(ask) == 0 {
		return
	}
	waiting, err := s.cfg.Waiting.Waiting(ctx, ask)
	if err != nil {
		s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "cannot tell queued operations from running ones", slog.String("error", err.Error()))
		return
	}
	for i := range ops {
		if ops[i].State == host.Claimed.String() && ops[i].Worker == "" && waiting[ops[i].RequestID] {
			ops[i].State = host.Queued.String()
		}
	}
}
