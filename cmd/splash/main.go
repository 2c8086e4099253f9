// Command splash runs Splash Fabric: the host, the worker pool and the
// embedded NATS node, in one process (dev) or apart.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "dev" {
		fmt.Println("dev mode arrives with the fabric")
		return
	}
	fmt.Fprintln(os.Stderr, "usage: splash dev")
	os.Exit(2)
}
