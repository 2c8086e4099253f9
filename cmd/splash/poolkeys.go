package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/splashfabric/splashfabric/protocol"
)

// poolKeysExt ends the name of a pool's key ring file in a --pool-keys
// directory: <pool>.keys.
const poolKeysExt = ".keys"

// loadPoolKeys reads every <pool>.keys ring in dir, by pool name. Other
// files are ignored; a ring file that does not parse, or whose name is not
// a legal pool name, is an error naming it.
func loadPoolKeys(dir string) (map[string]protocol.KeyRing, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: --pool-keys: %v", errKeyFile, err)
	}
	out := make(map[string]protocol.KeyRing)
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), poolKeysExt)
		if !ok || e.IsDir() {
			continue
		}
		if err := protocol.ValidateToolName(name); err != nil {
			return nil, fmt.Errorf("%w: --pool-keys: %q is not <pool>%s: %v", errKeyFile, e.Name(), poolKeysExt, err)
		}
		ring, err := loadKeyRing(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[name] = ring
	}
	return out, nil
}
