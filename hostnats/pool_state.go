package hostnats

import (
	"context"

	"github.com/splashfabric/splashfabric/fabric"
)

// PoolState reads tool's pool consumer through the transport's
// connection; see fabric.ReadPoolState.
func (t *HostTransport) PoolState(ctx context.Context, tool string) (fabric.PoolState, bool, error) {
	return fabric.ReadPoolState(ctx, t.js, tool)
}
