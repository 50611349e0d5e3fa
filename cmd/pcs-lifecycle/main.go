// Command pcs-lifecycle runs a compute node's lifecycle scripts; see README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cli"
)

func main() {
	// Scripts and every file the executor creates start from umask 022 (SPEC §4); files whose
	// mode matters are chmod'ed exactly anyway.
	syscall.Umask(0o022)
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		cancel(&cli.SignalCause{Signal: s})
	}()
	os.Exit(cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
