package natsconf_test

import (
	"fmt"
	"strings"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
)

// Render gives each pool a user of its own, authenticated by its nkey,
// with a copy of splash.conf's pool template naming its tools.
func ExampleRender() {
	text, err := natsconf.Render(natsconf.SplashConf(), []natsconf.Pool{{
		Name:  "text",
		Tools: []string{"demo.upper"},
		NKey:  "UBEPLBNNKITWUK7H7DKLZDU4ETM3HVPLKY4P2DWE23H64BJT5DGXBHFV",
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "{nkey:") || strings.Contains(line, `"splash.events.*.pool_demo_upper"`) || strings.HasPrefix(line, `"_INBOX_pool`) {
			fmt.Println(line)
		}
	}
	// Output:
	// "splash.events.*.pool_demo_upper"
	// "_INBOX_pool_text.>"
	// {nkey: UBEPLBNNKITWUK7H7DKLZDU4ETM3HVPLKY4P2DWE23H64BJT5DGXBHFV, permissions: $POOL_1_PERMISSIONS} # pool text
}
