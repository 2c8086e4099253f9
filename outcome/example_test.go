package outcome_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/outcome"
)

func Example() {
	fmt.Println(outcome.Text("done").Payload().Text)
	err := fmt.Errorf("calling the API: %w", outcome.RateLimited(2*time.Second, errors.New("429")))
	var rl *outcome.RateLimitedError
	fmt.Println(errors.As(err, &rl), rl.After)
	// Output:
	// done
	// true 2s
}
