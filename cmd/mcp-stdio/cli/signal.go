package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// onSignal has f run, once, at the next SIGTERM, SIGINT or SIGHUP the process
// gets, until the returned stop is called. main turns the first such
// signal into the end of the command's context; a command that takes its
// time to stop after it (serve's drain) watches for the next one with
// this. It is for a process of its own (Options.OwnProcess) only: it
// changes how the whole process handles signals.
func onSignal(f func()) (stop func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-c:
			f()
		case <-done:
		}
	}()
	return func() {
		signal.Stop(c)
		close(done)
		<-ended
	}
}

// endOnHangup returns ctx ended also by SIGHUP, until the returned stop is
// called. main ends a command's context at SIGTERM and SIGINT only: what
// SIGHUP means is the command's to say (serve --config reloads on it). It
// is for a process of its own (Options.OwnProcess) only.
func endOnHangup(ctx context.Context) (context.Context, func()) {
	return signal.NotifyContext(ctx, syscall.SIGHUP)
}
