package demotools

import (
	"fmt"

	"github.com/splashfabric/splashfabric/host"
)

// Catalog registers every demo tool, demo.ledger included, as an external
// tool of rt with its policy: RetryAttempts attempts for demo.flaky and
// demo.ratelimited, SleepDeadline for demo.sleep, the Stream* limits and
// Redact for demo.stream, and the JSON Schema contract for demo.json.sum.
// It has the shape host.LoopConfig.Catalog expects.
func Catalog(rt *host.Runtime) error {
	for _, s := range specs {
		if err := catalogue(rt, s); err != nil {
			return fmt.Errorf("demotools: catalog %q: %w", s.name, err)
		}
	}
	return nil
}

func catalogue(rt *host.Runtime, s spec) error {
	p := host.NewToolPolicy(s.name)
	if s.maxAttempts > 0 {
		p = p.WithMaxAttempts(s.maxAttempts)
	}
	if s.deadline > 0 {
		p = p.WithDeadline(s.deadline)
	}
	if s.stream {
		p = p.WithStream(host.NewToolStreamPolicy(
			StreamMaxChunks, StreamMaxChunkBytes, StreamMaxSourceBytes, StreamMaxReleasedBytes))
	}
	m := host.NewToolMetadata(s.description)
	m.Idempotent = s.idempotent
	m.Cancellable = s.cancellable
	if s.json {
		return rt.RegisterExternalJSONToolWithContract(p, m, SumInputSchema(), SumOutputSchema())
	}
	if err := rt.RegisterExternalToolWithMetadata(p, m); err != nil {
		return err
	}
	if s.stream {
		return rt.SetExternalStreamRedactor(s.name, Redact)
	}
	return nil
}
