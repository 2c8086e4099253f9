package main

import (
	"fmt"
	"log/slog"

	"github.com/splashfabric/splashfabric/httpapi/apitoken"
)

// openTokenFile loads the host's token file and watches it: a change is
// logged with the names of the tokens now served, a file left broken as a
// warning, once, while the tokens before it stay in force.
func openTokenFile(path string, log *slog.Logger) (*apitoken.File, error) {
	f, err := apitoken.OpenFile(path, apitoken.FileConfig{OnReload: func(s *apitoken.Set, err error) {
		if err != nil {
			log.Warn("api token file refused; the tokens loaded before stay in force", "path", path, "err", err)
			return
		}
		log.Info("api tokens reloaded", "path", path, "tokens", s.Names())
	}})
	if err != nil {
		return nil, fmt.Errorf("%w: --api-tokens-file: %v", errTokenFile, err)
	}
	if f.Current().Len() == 0 {
		log.Warn("api token file holds no token: every authenticated request is refused until it does", "path", path)
	}
	log.Info("api tokens loaded", "path", path, "tokens", f.Current().Names())
	return f, nil
}
