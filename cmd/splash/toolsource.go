package main

import (
	"context"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/toolspec"
)

// toolSource answers GET /v1/tools: the host's live catalog, and each
// tool's pool consumer read over the transport's connection.
type toolSource struct {
	live      *fabric.LiveCatalog
	transport *hostnats.HostTransport
}

var _ httpapi.ToolSource = toolSource{}

func (s toolSource) Catalog() *toolspec.Set { return s.live.Current() }

func (s toolSource) Pool(ctx context.Context, tool string) (apiwire.Pool, bool, error) {
	p, ok, err := s.transport.PoolState(ctx, tool)
	return apiwire.Pool{Pending: p.Pending, AckPending: p.AckPending, Redelivered: p.Redelivered, Waiting: p.Waiting}, ok, err
}
