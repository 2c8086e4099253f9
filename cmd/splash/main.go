package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default behaviour so a second
		// one kills a process whose shutdown hangs.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], &app{stdout: os.Stdout, stderr: os.Stderr, lookupEnv: os.LookupEnv})
	stop()
	os.Exit(code)
}
